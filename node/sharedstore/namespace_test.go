//go:build linux

package sharedstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/poll"
)

// holdNamespace starts a process in a mount namespace of its own, a copy
// of this one's with the given propagation (libvirt makes a slave copy for
// each QEMU), working in dir, and waits until it runs there with want
// mounted. It returns the process's pid and a function that ends it (as
// the test's end does).
func holdNamespace(t *testing.T, propagation, dir, want string) (int, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", propagation, "--wd", dir, "sleep", "600")
	if err := cmd.Start(); err != nil {
		cancel()
		t.Skipf("unshare: %v", err)
	}
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); _ = cmd.Wait() }) }
	t.Cleanup(stop)
	pid := cmd.Process.Pid
	if err := poll.Until(context.Background(), 10*time.Second, func() error { return inNamespace(pid, want) }); err != nil {
		t.Fatalf("the other namespace never showed %s: %v", want, err)
	}
	return pid, stop
}

// inNamespace returns nil once unshare's process pid has made its mount
// namespace and run sleep in it, with dir mounted there.
func inNamespace(pid int, dir string) error {
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(comm)) != "sleep" {
		return fmt.Errorf("process %d is %s, not yet sleep", pid, comm)
	}
	return mountedIn(pid, dir)
}

// mountedIn returns nil when process pid's mount namespace has dir
// mounted.
func mountedIn(pid int, dir string) error {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "mountinfo"))
	if err != nil {
		return err
	}
	if !strings.Contains(string(b), " "+dir+" ") {
		return fmt.Errorf("%s is not mounted in process %d's namespace", dir, pid)
	}
	return nil
}

// A QEMU runs in a copy of the host's mount namespace. A folder unmounted
// while such a copy holds it idle is unmounted there too: its loop device
// let go of, its image grown at the next mount. One that a process there
// works in is busy: Unmount says EBUSY, as it does for a guest using it,
// and once that process is gone Release unmounts it and the directory's
// bind.
func TestStore_unmount_reaches_other_namespaces(t *testing.T) {
	const mib = 1 << 20
	ctx := context.Background()
	tests := []struct {
		name string
		busy bool
	}{
		{name: "idle copy"},
		{name: "busy copy", busy: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			if err := s.Ensure(ctx, "team", 64*mib); err != nil {
				t.Fatal(err)
			}
			dir := s.Path("team")
			wd := s.cfg.Dir
			if tc.busy {
				wd = dir
			}
			pid, stop := holdNamespace(t, "slave", wd, dir)
			err := s.Unmount("team")
			if tc.busy {
				if !errors.Is(err, syscall.EBUSY) {
					t.Fatalf("unmount of a folder another namespace works in: %v, want EBUSY", err)
				}
				stop()
				if err := New(s.cfg).Release(); err != nil { // as a new store would, after a stop
					t.Fatal(err)
				}
				ms, _ := mountTable()
				if i := slices.IndexFunc(ms, func(m mount) bool { return within(m.point, s.cfg.Dir) }); i >= 0 {
					t.Fatalf("after Release, %s is still mounted", ms[i].point)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if mountedIn(pid, dir) == nil {
				t.Fatal("the other namespace still has the folder mounted")
			}
			if err := waitDetached(ctx, s.image("team")); err != nil {
				t.Fatalf("the image after unmount: %v", err)
			}
			if err := s.Ensure(ctx, "team", 256*mib); err != nil {
				t.Fatal(err)
			}
			var st syscall.Statfs_t
			if err := syscall.Statfs(dir, &st); err != nil || int64(st.Blocks)*st.Bsize < 200*mib {
				t.Fatalf("after growing at the next mount: %d blocks of %d (%v), want 256 MiB", st.Blocks, st.Bsize, err)
			}
		})
	}
}

// An image a mount namespace elsewhere still holds is not grown: writing
// under its live file system would be lost when that lets go, or break it.
func TestStore_no_growth_under_a_live_file_system(t *testing.T) {
	const mib = 1 << 20
	ctx := context.Background()
	s := newStore(t)
	if err := s.Ensure(ctx, "team", 64*mib); err != nil {
		t.Fatal(err)
	}
	dir := s.Path("team")
	// A private copy (as on a host whose QEMUs do not follow the host's
	// unmounts) keeps the file system alive after the host unmounts it.
	pid, _ := holdNamespace(t, "private", s.cfg.Dir, dir)
	if err := syscall.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	if err := mountedIn(pid, dir); err != nil {
		t.Fatalf("a private copy followed the host's unmount: %v", err)
	}
	before, err := fsBytes(ctx, s.image("team"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ensure(ctx, "team", 256*mib); err != nil {
		t.Fatal(err)
	}
	if after, err := fsBytes(ctx, s.image("team")); err != nil || after != before {
		t.Fatalf("the image under a live file system went from %d to %d bytes (%v)", before, after, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "still"), []byte("works"), 0o644); err != nil {
		t.Fatalf("the folder mounted again: %v", err)
	}
}

func TestWithin_cases(t *testing.T) {
	tests := []struct {
		path, dir string
		want      bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/x/..y", "/x", true},
		{"/anything", "/", true},
	}
	for _, tc := range tests {
		if got := within(tc.path, tc.dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v, want %v", tc.path, tc.dir, got, tc.want)
		}
	}
}

// Only a directory bound on itself is taken for shareDir's bind: a file
// system mounted there (a disk given to the folders) is not Release's to
// unmount.
func TestSelfBind_cases(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounts file systems: needs root")
	}
	tests := []struct {
		name  string
		mount func(dir string) error
		want  bool
	}{
		{name: "bound on itself", mount: bindShared, want: true},
		{name: "a file system", mount: func(dir string) error { return syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m") }},
		{name: "another directory", mount: func(dir string) error {
			return syscall.Mount(filepath.Dir(dir), dir, "", syscall.MS_BIND, "")
		}},
		{name: "nothing", mount: func(string) error { return nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := tc.mount(dir); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
			ms, err := mountTable()
			if err != nil {
				t.Fatal(err)
			}
			if got := selfBind(ms, dir); got != tc.want {
				t.Fatalf("selfBind = %v, want %v", got, tc.want)
			}
		})
	}
}
