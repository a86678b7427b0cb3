package hypervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/digitalocean/go-libvirt"
)

var _ MemorySnapshots = (*Libvirt)(nil)

// memoryPath checks that path is a new file in the driver's VM directory
// (libvirtd writes and reads it as root: no other place is handed to it).
func (d *Libvirt) memoryPath(path string, mustExist bool) error {
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
func (d *Libvirt) SaveMemory(ctx context.Context, name, path string) error {
	if err := d.memoryPath(path, false); err != nil {
		return err
	}
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	_, err = do(ctx, d, "save the memory of "+name, func(l *libvirt.Libvirt) (struct{}, error) {
		return struct{}{}, l.DomainSaveFlags(dom, path, nil, uint32(libvirt.DomainSaveRunning))
	})
	if err != nil {
		_ = os.Remove(path) // a partial file restores nothing
	}
	return err
}

// RestoreMemory starts the domain a SaveMemory file holds, running where
// it was saved.
func (d *Libvirt) RestoreMemory(ctx context.Context, path string) error {
	if err := d.memoryPath(path, true); err != nil {
		return err
	}
	_, err := do(ctx, d, "restore "+filepath.Base(path), func(l *libvirt.Libvirt) (struct{}, error) {
		return struct{}{}, l.DomainRestoreFlags(path, nil, uint32(libvirt.DomainSaveRunning))
	})
	return err
}
