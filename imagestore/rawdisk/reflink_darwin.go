package rawdisk

import "golang.org/x/sys/unix"

// reflink is an APFS clone: dst shares src's blocks until either is
// written.
func reflink(src, dst string) error { return unix.Clonefile(src, dst, unix.CLONE_NOFOLLOW) }
