package hypervisor

import (
	"context"
	"fmt"
)

var _ DiskResizer = (*Fake)(nil)

// fakeDiskBytes is the size of a fake domain's disk until it is resized.
const fakeDiskBytes = 1 << 30

// ResizeDisk grows the fake domain's disk.
func (f *Fake) ResizeDisk(_ context.Context, name string, bytes int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return ErrUnavailable
	}
	d, ok := f.domains[name]
	if !ok {
		return fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if bytes < d.size() {
		return fmt.Errorf("resize %s: %d bytes is smaller than its disk (%d bytes): %w", name, bytes, d.size(), ErrShrink)
	}
	d.diskBytes = bytes
	return nil
}

// DiskSize returns the fake domain's disk size.
func (f *Fake) DiskSize(name string) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.domains[name]
	if !ok {
		return 0, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	return d.size(), nil
}

func (d *fakeDomain) size() int64 {
	if d.diskBytes == 0 {
		return fakeDiskBytes
	}
	return d.diskBytes
}
