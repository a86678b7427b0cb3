package libvirt

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.DiskResizer = (*Driver)(nil)

// ResizeDisk grows the domain's overlay: through QEMU while the domain
// runs or is paused (virDomainBlockResize: the guest's virtio disk says
// its capacity changed), with qemu-img while it is shut off.
func (d *Driver) ResizeDisk(ctx context.Context, name string, bytes int64) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	cur, err := d.DiskSize(name)
	if err != nil {
		return err
	}
	if bytes < cur {
		return fmt.Errorf("resize %s: %d bytes is smaller than its disk (%d bytes): %w", name, bytes, cur, hypervisor.ErrShrink)
	}
	if bytes == cur {
		return nil
	}
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	st, err := d.state(ctx, dom)
	if err != nil {
		return err
	}
	path := d.DiskPath(name)
	if st != hypervisor.StateShutoff {
		_, err := do(ctx, d, "resize the disk of "+name, func(l *golibvirt.Libvirt) (struct{}, error) {
			return struct{}{}, l.DomainBlockResize(dom, path, uint64(bytes), golibvirt.DomainBlockResizeBytes)
		})
		return err
	}
	out, err := exec.CommandContext(ctx, "qemu-img", "resize", "-q", "-f", "qcow2", path, strconv.FormatInt(bytes, 10)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("qemu-img resize: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// DiskSize reads the virtual size in the header of the domain's qcow2
// overlay (bytes 24-31, big-endian; QEMU rewrites it on a live resize).
func (d *Driver) DiskSize(name string) (int64, error) {
	if err := d.checkName(name); err != nil {
		return 0, err
	}
	f, err := os.Open(d.DiskPath(name))
	if err != nil {
		return 0, fmt.Errorf("the disk of %s: %w", name, err)
	}
	defer f.Close()
	var h [32]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return 0, fmt.Errorf("the disk of %s: %w", name, err)
	}
	if string(h[:4]) != "QFI\xfb" {
		return 0, fmt.Errorf("the disk of %s is not a qcow2", name)
	}
	return int64(binary.BigEndian.Uint64(h[24:32])), nil
}
