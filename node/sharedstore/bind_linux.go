package sharedstore

import (
	"fmt"
	"syscall"
)

// bindShared binds dir on itself, with the mounts under it, as a shared
// mount.
func bindShared(dir string) error {
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind the shared folders' directory on itself: %w", err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_SHARED, ""); err != nil {
		_ = syscall.Unmount(dir, 0)
		return fmt.Errorf("make the shared folders' directory a shared mount: %w", err)
	}
	return nil
}

// detach unmounts dir lazily (MNT_DETACH).
func detach(dir string) error { return syscall.Unmount(dir, syscall.MNT_DETACH) }
