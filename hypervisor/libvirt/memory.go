package libvirt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore/rawdisk"
)

var _ hypervisor.MemorySnapshots = (*Driver)(nil)

// memoryPath checks that path is a new file in the driver's VM directory
// (libvirtd writes and reads it as root: no other place is handed to it).
func (d *Driver) memoryPath(path string, mustExist bool) error {
	rel, err := filepath.Rel(d.cfg.Dir, filepath.Clean(path))
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.Contains(rel, string(filepath.Separator)) {
		return fmt.Errorf("memory file %s: not a file of %s", path, d.cfg.Dir)
	}
	_, err = os.Lstat(path)
	switch {
	case mustExist && err != nil:
		return fmt.Errorf("memory file: %w", err)
	case !mustExist && err == nil:
		return fmt.Errorf("memory file %s: %w", path, os.ErrExist)
	}
	return nil
}

// SaveMemory writes the domain's memory and device state to path (a new
// file in the VM directory) and stops the domain, which stays defined.
func (d *Driver) SaveMemory(ctx context.Context, name, path string) error {
	if err := d.memoryPath(path, false); err != nil {
		return err
	}
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	_, err = do(ctx, d, "save the memory of "+name, func(l *golibvirt.Libvirt) (struct{}, error) {
		return struct{}{}, l.DomainSaveFlags(dom, path, nil, uint32(golibvirt.DomainSaveRunning))
	})
	if err != nil {
		_ = os.Remove(path) // a partial file restores nothing
	}
	return err
}

// RestoreMemory starts the domain a SaveMemory file holds, running where
// it was saved.
func (d *Driver) RestoreMemory(ctx context.Context, path string) error {
	if err := d.memoryPath(path, true); err != nil {
		return err
	}
	_, err := do(ctx, d, "restore "+filepath.Base(path), func(l *golibvirt.Libvirt) (struct{}, error) {
		return struct{}{}, l.DomainRestoreFlags(path, nil, uint32(golibvirt.DomainSaveRunning))
	})
	return err
}

// MemoryPath is where a domain's memory file goes: beside its disk.
func (d *Driver) MemoryPath(name string) string { return filepath.Join(d.cfg.Dir, name+".state") }

// RestoreAs makes the new domain s from domain from's memory file
// (MemoryPath) and a copy of from's disk, running where from was saved,
// under s's name, files, forwards and screen. libvirt restores a file only
// as the domain it names, so the restore reads a copy of it that names s
// (a fresh UUID, s's files and QEMU arguments; the hardware as saved).
// On failure nothing of s is left.
func (d *Driver) RestoreAs(ctx context.Context, from string, s hypervisor.Spec) (err error) {
	for _, n := range []string{from, s.Name} {
		if err := d.checkName(n); err != nil {
			return err
		}
	}
	if s.GuestOS != "" && s.GuestOS != "linux" {
		return fmt.Errorf("%s: a %s guest: %w", s.Name, s.GuestOS, hypervisor.ErrUnsupported)
	}
	state := d.MemoryPath(from)
	img, err := readSaveImage(state)
	if err != nil {
		return err
	}
	if _, err := d.lookup(ctx, s.Name); err == nil {
		return fmt.Errorf("restore %s: %w", s.Name, os.ErrExist)
	} else if !errors.Is(err, hypervisor.ErrNotFound) {
		return err
	}
	disk, restore := d.DiskPath(s.Name), d.MemoryPath(s.Name)+".restore"
	defer func() {
		_ = os.Remove(restore)
		if err != nil {
			if dom, lerr := d.lookup(context.WithoutCancel(ctx), s.Name); lerr == nil {
				_ = d.destroy(context.WithoutCancel(ctx), dom)
				_ = d.undefine(context.WithoutCancel(ctx), dom)
			}
			for _, p := range []string{disk, d.vncSecretPath(s.Name)} {
				_ = os.Remove(p)
			}
		}
	}()
	for _, p := range []string{disk, restore} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore %s: %w", s.Name, err)
		}
	}
	if err := rawdisk.Clone(ctx, d.DiskPath(from), disk); err != nil {
		return fmt.Errorf("restore %s: the template's disk: %w", s.Name, err)
	}
	secret, err := d.writeVNCSecret(s)
	if err != nil {
		return err
	}
	uuid, err := newUUID()
	if err != nil {
		return err
	}
	own, err := domainXML(d.cfg.DomainType, s, domainFiles{disk: disk, console: d.consolePath(s.Name), vncSecret: secret, label: d.user.label(), uuid: uuid})
	if err != nil {
		return err
	}
	x, err := restoredXML(img.xml, own, from, s.Name, uuid, [][2]string{
		{d.DiskPath(from), disk}, {d.consolePath(from), d.consolePath(s.Name)},
	})
	if err != nil {
		return fmt.Errorf("restore %s from %s: %w", s.Name, from, err)
	}
	if err := writeRestoreFile(ctx, state, img, x, restore); err != nil {
		return err
	}
	// Defined first, so the restored domain is persistent (it stops and
	// starts like any other) with the hardware it was saved with.
	if _, err := do(ctx, d, "define "+s.Name, func(l *golibvirt.Libvirt) (golibvirt.Domain, error) { return l.DomainDefineXML(x) }); err != nil {
		return err
	}
	_, err = do(ctx, d, "restore "+s.Name, func(l *golibvirt.Libvirt) (struct{}, error) {
		return struct{}{}, l.DomainRestoreFlags(restore, nil, uint32(golibvirt.DomainSaveRunning))
	})
	return err
}
