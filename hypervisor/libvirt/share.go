package libvirt

import (
	"context"
	"encoding/xml"
	"fmt"
	"slices"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.SharedDirs = (*Driver)(nil)

// folders is the driver's SharedDirs role: host folders given to guests
// over virtio-9p.
type folders struct {
	*connPool
	cfg  *Config
	user qemuUser
}

// CanShareDirs asks libvirt whether its QEMU can give a guest a host folder
// over virtio-9p (the domain capabilities' file system driver "path").
func (f folders) CanShareDirs(ctx context.Context) error {
	caps, err := do(ctx, f, "domain capabilities", func(l *golibvirt.Libvirt) (string, error) {
		return l.ConnectGetDomainCapabilities(nil, golibvirt.OptString{"x86_64"}, golibvirt.OptString{"pc"}, golibvirt.OptString{f.cfg.DomainType}, 0)
	})
	if err != nil {
		return err
	}
	return sharesDirs(caps)
}

// SharedDirOwner is QEMU's user: with mapped access every file a guest
// makes is QEMU's on the host.
func (f folders) SharedDirOwner() (uid, gid int) { return f.user.uid, f.user.gid }

// sharesDirs reads libvirt's domain capabilities: nil when they offer the
// 9p file system driver ("path").
func sharesDirs(caps string) error {
	var c struct {
		Devices struct {
			Filesystem struct {
				Supported string `xml:"supported,attr"`
				Enums     []struct {
					Name   string   `xml:"name,attr"`
					Values []string `xml:"value"`
				} `xml:"enum"`
			} `xml:"filesystem"`
		} `xml:"devices"`
	}
	if err := xml.Unmarshal([]byte(caps), &c); err != nil {
		return fmt.Errorf("read libvirt's domain capabilities: %w", err)
	}
	fs := c.Devices.Filesystem
	if fs.Supported != "yes" {
		return fmt.Errorf("libvirt's QEMU shares no host folder (no file system devices)")
	}
	for _, e := range fs.Enums {
		if e.Name == "driverType" && slices.Contains(e.Values, "path") {
			return nil
		}
	}
	return fmt.Errorf("libvirt's QEMU has no virtio-9p (file system driver \"path\")")
}
