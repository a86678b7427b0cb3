package libvirt

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// QEMU never runs as root: every domain pins its process to an
// unprivileged user (libvirt's DAC "static" label), whatever qemu.conf
// says, and libvirt gives that user the domain's disks for as long as it
// runs. A disk whose header names a host file (which every disk that enters
// the cluster is checked for) could then reach only what that user may
// read. Where the host has AppArmor or SELinux, libvirt's confinement (on by
// default on Debian and Fedora) keeps each QEMU to its own domain's files
// on top of that.

// defaultQEMUUsers are the unprivileged users distributions run QEMU as:
// Debian's and Ubuntu's, then Fedora's and RHEL's.
func defaultQEMUUsers() []string { return []string{"libvirt-qemu", "qemu"} }

// qemuUser is the user QEMU runs as.
type qemuUser struct {
	name     string
	uid, gid int
	groups   []int
}

// lookupQEMUUser resolves name, or the first of defaultQEMUUsers the host
// has when name is "". Root is refused.
func lookupQEMUUser(name string) (qemuUser, error) {
	names := []string{name}
	if name == "" {
		names = defaultQEMUUsers()
	}
	var errs []error
	for _, n := range names {
		u, err := user.Lookup(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		q := qemuUser{name: n}
		q.uid, err = strconv.Atoi(u.Uid)
		if err == nil {
			q.gid, err = strconv.Atoi(u.Gid)
		}
		if err != nil {
			return qemuUser{}, fmt.Errorf("QEMU user %s: %w", n, err)
		}
		if q.uid == 0 || q.gid == 0 {
			return qemuUser{}, fmt.Errorf("QEMU user %s is root; QEMU must run as an unprivileged user", n)
		}
		gids, _ := u.GroupIds()
		for _, g := range gids {
			if id, err := strconv.Atoi(g); err == nil {
				q.groups = append(q.groups, id)
			}
		}
		return q, nil
	}
	return qemuUser{}, fmt.Errorf("no user to run QEMU as (tried %v): %w", names, errors.Join(errs...))
}

// label is the user's DAC label in a domain's <seclabel>.
func (q qemuUser) label() string { return fmt.Sprintf("+%d:+%d", q.uid, q.gid) }

// reach returns an error naming the first directory on the way to dir
// (dir included) that the user may not search: QEMU opens its disks there.
// It reads mode bits, not ACLs.
func (q qemuUser) reach(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for p := dir; ; p = filepath.Dir(p) {
		ok, err := q.may(p, 0o1)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("QEMU runs as %s, which cannot search %s on the way to %s: give others search permission (chmod o+x) or choose a data dir it can reach",
				q.name, describe(p), dir)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// may reports whether the user has the permission bits want (as "other"
// bits: 1 search, 2 write, 4 read) on path, by its owner, group and mode.
func (q qemuUser) may(path string, want os.FileMode) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, fmt.Errorf("stat %s: no owner", path)
	}
	switch {
	case int(st.Uid) == q.uid:
		want <<= 6
	case int(st.Gid) == q.gid || slices.Contains(q.groups, int(st.Gid)):
		want <<= 3
	}
	return fi.Mode().Perm()&want == want, nil
}

// describe is a path with its mode and owner, for a message.
func describe(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return path
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%s (%s, owner %d:%d)", path, fi.Mode().Perm(), st.Uid, st.Gid)
	}
	return path
}

// canUseKVM returns an error unless the user may read and write /dev/kvm
// (udev gives it to group kvm, mode 0660, on Debian and Fedora).
func (q qemuUser) canUseKVM() error {
	const dev = "/dev/kvm"
	ok, err := q.may(dev, 0o6)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("QEMU runs as %s, which cannot use %s: give it to group kvm, mode 0660, as udev does, and put %s in that group",
			q.name, describe(dev), q.name)
	}
	return nil
}

// traversable makes dir (created if missing) mode 0711: its owner's, and
// searchable by QEMU's user without listing it.
func traversable(dir string) error {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return err
	}
	return os.Chmod(dir, 0o711)
}
