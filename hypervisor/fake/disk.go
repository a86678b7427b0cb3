package fake

import (
	"context"
	"fmt"

	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.DiskResizer = (*Driver)(nil)

// fakeDiskBytes is the size of a fake domain's disk until it is resized.
const fakeDiskBytes = 1 << 30

// ResizeDisk grows the fake domain's disk.
func (f *Driver) ResizeDisk(_ context.Context, name string, bytes int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return ErrUnavailable
	}
	d, ok := f.domains[name]
	if !ok {
		return fmt.Errorf("%s: %w", name, hypervisor.ErrNotFound)
	}
	if bytes < d.size() {
		return fmt.Errorf("resize %s: %d bytes is smaller than its disk (%d bytes): %w", name, bytes, d.size(), hypervisor.ErrShrink)
	}
	d.diskBytes = bytes
	return nil
}

// DiskSize returns the fake domain's disk size.
func (f *Driver) DiskSize(name string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.domains[name]
	if !ok {
		return 0, fmt.Errorf("%s: %w", name, hypervisor.ErrNotFound)
	}
	return d.size(), nil
}

func (d *fakeDomain) size() int64 {
	if d.diskBytes == 0 {
		return fakeDiskBytes
	}
	return d.diskBytes
}
