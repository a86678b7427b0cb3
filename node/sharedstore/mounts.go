package sharedstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// mount is one line of /proc/self/mountinfo.
type mount struct {
	id, parent    string
	dev, root     string // the file system's device, and the path in it mounted
	point, source string
	// shared is true for a mount in a peer group: mounts and unmounts
	// under it reach its copies in other mount namespaces.
	shared bool
}

// mountTable reads this process's mounts, in mount order.
func mountTable() ([]mount, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("mount table: %w", err)
	}
	var out []mount
	for _, line := range strings.Split(string(b), "\n") {
		// mount ID, parent ID, major:minor, root, mount point, options,
		// optional fields..., "-", fstype, source, super options
		f := strings.Fields(line)
		i := slices.Index(f, "-")
		if len(f) < 10 || i < 6 || i+2 >= len(f) {
			continue
		}
		out = append(out, mount{
			id: f[0], parent: f[1], dev: f[2], root: unescape(f[3]),
			point:  unescape(f[4]),
			source: f[i+2],
			shared: slices.ContainsFunc(f[6:i], func(o string) bool { return strings.HasPrefix(o, "shared:") }),
		})
	}
	return out, nil
}

// loopOf returns the loop device mounted on dir, or "".
func loopOf(dir string) string {
	ms, _ := mountTable()
	for _, m := range slices.Backward(ms) {
		if m.point == dir && strings.HasPrefix(m.source, "/dev/loop") {
			return m.source
		}
	}
	return ""
}

// selfBind reports whether the last mount on dir binds dir on itself (as
// shareDir does), rather than mounting another file system or directory
// there.
func selfBind(ms []mount, dir string) bool {
	top := -1
	for i, m := range ms {
		if m.point == dir {
			top = i
		}
	}
	if top < 0 {
		return false
	}
	at := slices.IndexFunc(ms, func(m mount) bool { return m.id == ms[top].parent })
	if at < 0 {
		return false
	}
	parent := ms[at]
	rel, err := filepath.Rel(parent.point, dir)
	return err == nil && parent.dev == ms[top].dev && within(dir, parent.point) &&
		filepath.Join(parent.root, rel) == ms[top].root
}

// holder is the mount dir lies in: the last mounted of those on dir or
// on the nearest directory above it.
func holder(ms []mount, dir string) (mount, bool) {
	best, found := mount{}, false
	for _, m := range ms {
		if within(dir, m.point) && (!found || len(m.point) >= len(best.point)) {
			best, found = m, true
		}
	}
	return best, found
}

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// shareDir makes the folders' directory a shared mount, unless the mount
// it lies in is one already (as / is on most hosts). A VM's QEMU runs in a
// mount namespace of its own (libvirt's default), which starts as a copy
// of the host's: under a private mount, a folder unmounted by svc would
// stay mounted in every QEMU started while it was, its file system alive
// and its image attached to a loop device; growing that image or mounting
// it again would then write under a live file system. Under a shared
// mount, libvirt's copies follow each unmount, and one a guest still uses
// fails with EBUSY. Kubelet does the same with its directory.
func (s *Store) shareDir() error {
	ms, err := mountTable()
	if err != nil {
		return err
	}
	if m, ok := holder(ms, s.cfg.Dir); ok && m.shared {
		return nil
	}
	if err := bindShared(s.cfg.Dir); err != nil {
		return err
	}
	s.cfg.Log.Info("shared folders' directory made a shared mount", "dir", s.cfg.Dir)
	return nil
}

// unshareDirIfIdle undoes shareDir's bind (or one left by an earlier
// run: a bind of the directory on itself) once no folder is mounted under
// it, so that a peer with no folders leaves no mount behind.
func (s *Store) unshareDirIfIdle() error {
	ms, err := mountTable()
	if err != nil {
		return err
	}
	if !selfBind(ms, s.cfg.Dir) || slices.ContainsFunc(ms, func(m mount) bool { return m.point != s.cfg.Dir && within(m.point, s.cfg.Dir) }) {
		return nil
	}
	// Detached rather than unmounted: the bind shows the directory it
	// covers, and a process looking up a path through it (libmount checks
	// each loop device's backing file, these images among them) would
	// make a plain unmount fail with EBUSY for a moment.
	if err := detach(s.cfg.Dir); err != nil {
		return fmt.Errorf("unmount the shared folders' directory: %w", err)
	}
	return nil
}

// detachWait bounds how long a store waits for the kernel to let go of an
// unmounted image's loop device.
const detachWait = 5 * time.Second

// errImageInUse is an image still attached to a loop device while no
// folder of this peer's mount namespace has it mounted.
var errImageInUse = errors.New("its file system is still mounted outside this peer's mount namespace")

// waitDetached returns once no loop device is attached to img, or
// errImageInUse after detachWait: an unmounted loop device is let go of
// asynchronously, and not at all while another mount namespace holds it.
func waitDetached(ctx context.Context, img string) error {
	ctx, cancel := context.WithTimeout(ctx, detachWait)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		devs, err := loopsOf(img)
		if err != nil || len(devs) == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%s)", errImageInUse, strings.Join(devs, ", "))
		case <-tick.C:
		}
	}
}

// loopsOf names the loop devices whose backing file is img.
func loopsOf(img string) ([]string, error) {
	paths, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return nil, err
	}
	want, err := filepath.Abs(img)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(want); err == nil {
		want = real
	}
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // detached meanwhile
		}
		if strings.TrimSuffix(string(b), "\n") == want {
			out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(p))))
		}
	}
	return out, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
