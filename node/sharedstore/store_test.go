package sharedstore

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/svc-project/svc/node/diskbudget"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts file systems: needs root")
	}
	s := New(Config{Dir: filepath.Join(t.TempDir(), "shared"), UID: 4242, GID: 4243})
	if err := s.Probe(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nss, _ := s.Namespaces()
		for _, ns := range nss {
			_ = s.Remove(context.Background(), ns)
		}
	})
	return s
}

// A folder is a file system of its bound: its root the hypervisor user's,
// what it holds counted, a write past the bound refused with ENOSPC, a
// larger bound grown in place with the files kept, Clear an empty one,
// Remove nothing left.
func TestStore_folder_lifecycle(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const mib = 1 << 20
	if err := s.Ensure(ctx, "team", 64*mib); err != nil {
		t.Fatal(err)
	}
	dir := s.Path("team")
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil || st.Uid != 4242 || st.Gid != 4243 {
		t.Fatalf("the folder's root is %d:%d (%v), want 4242:4243", st.Uid, st.Gid, err)
	}
	before, ok := s.Usage("team")
	if !ok {
		t.Fatal("no usage for a mounted folder")
	}
	if err := os.WriteFile(filepath.Join(dir, "ten"), make([]byte, 10*mib), 0o644); err != nil {
		t.Fatal(err)
	}
	syscall.Sync()
	if after, _ := s.Usage("team"); after-before < 10*mib {
		t.Fatalf("usage %d -> %d after writing 10 MiB", before, after)
	}
	err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 80*mib), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 80 MiB more into 64 MiB: %v, want ENOSPC", err)
	}
	_ = os.Remove(filepath.Join(dir, "big"))
	// A larger bound: in place where the host lets a mounted file system
	// grow (CAP_SYS_RESOURCE), else at the next mount (as after a restart).
	if err := s.Ensure(ctx, "team", 256*mib); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, "umount", dir); err != nil {
		t.Fatal(err)
	}
	if err := s.Ensure(ctx, "team", 256*mib); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 80*mib), 0o644); err != nil {
		t.Fatalf("80 MiB into the folder grown to 256 MiB: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ten")); err != nil {
		t.Fatalf("growing lost a file: %v", err)
	}
	if err := s.Clear(ctx, "team", 64*mib); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() != "lost+found" }) {
		t.Fatalf("a cleared folder holds %v", entries)
	}
	if nss, err := s.Namespaces(); err != nil || !slices.Equal(nss, []string{"team"}) {
		t.Fatalf("namespaces %v, %v", nss, err)
	}
	if err := s.Remove(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the folder after Remove: %v", err)
	}
	if nss, _ := s.Namespaces(); len(nss) != 0 {
		t.Fatalf("namespaces after Remove: %v", nss)
	}
}

// A store made again over the same directory (a restarted peer) mounts the
// folders it finds, files intact.
func TestStore_restart_mounts_again(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.Ensure(ctx, "team", 64<<20); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Path("team"), "kept"), []byte("yes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, "umount", s.Path("team")); err != nil { // as a host restart leaves it
		t.Fatal(err)
	}
	again := New(s.cfg)
	if err := again.Ensure(ctx, "team", 64<<20); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(again.Path("team"), "kept")); err != nil || string(b) != "yes" {
		t.Fatalf("after a restart: %q, %v", b, err)
	}
}

func TestUnescape_cases(t *testing.T) {
	for in, want := range map[string]string{`/a/b`: "/a/b", `/a\040b`: "/a b", `/x\134y`: `/x\y`, `\0`: `\0`} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// smallTmpfs mounts a 256 MiB tmpfs for the test.
func smallTmpfs(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts file systems: needs root")
	}
	small := filepath.Join(t.TempDir(), "small")
	if err := os.Mkdir(small, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), "mount", "-t", "tmpfs", "-o", "size=256m", "tmpfs", small); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(small, 0) })
	return small
}

// A folder whose bound the host's free space cannot hold is refused (the
// guest would meet I/O errors rather than a full folder), and Room says so
// when under 1 GiB is free.
func TestStore_no_room(t *testing.T) {
	small := smallTmpfs(t)
	s := New(Config{Dir: filepath.Join(small, "shared"), UID: 4242, GID: 4243})
	if err := s.Probe(); err != nil {
		t.Fatal(err)
	}
	if err := s.Room(); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Fatalf("Room on 256 MiB: %v", err)
	}
	err := s.Ensure(context.Background(), "team", 1<<30)
	if err == nil || !strings.Contains(err.Error(), "no room") {
		t.Fatalf("a 1 GiB folder on 256 MiB: %v", err)
	}
	if nss, _ := s.Namespaces(); len(nss) != 0 {
		t.Fatalf("a refused folder left %v", nss)
	}
}

// A folder's bound is promised on the disk it is on, not checked against
// the free space once: with a 160 MiB folder made on 256 MiB (its image
// sparse, so the disk still shows it free), a second of 160 MiB is
// refused, saying what is promised; a folder that fits is made.
func TestStore_bounds_are_reserved_together(t *testing.T) {
	small := smallTmpfs(t)
	disk := diskbudget.New(diskbudget.Config{Dir: small, Floor: 32 << 20, Name: "p1"})
	s := New(Config{Dir: filepath.Join(small, "shared"), UID: 4242, GID: 4243, Disk: disk})
	if err := s.Probe(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { _ = s.Remove(ctx, "team-a"); _ = s.Remove(ctx, "team-c") })
	if err := s.Ensure(ctx, "team-a", 160<<20); err != nil {
		t.Fatal(err)
	}
	if g := s.Growth(); g < 100<<20 {
		t.Fatalf("the folder's growth counted %d", g)
	}
	err := s.Ensure(ctx, "team-b", 160<<20)
	if !errors.Is(err, diskbudget.ErrNoRoom) || !strings.Contains(err.Error(), "promised") {
		t.Fatalf("a second 160 MiB folder on 256 MiB: %v", err)
	}
	if err := s.Ensure(ctx, "team-c", 16<<20); err != nil {
		t.Fatalf("a folder that fits: %v", err)
	}
}

// An image whose check corrects something (e2fsck's exit status 1: here a
// wrong free block count, as a journal recovered after an unclean release
// does) still grows offline; one e2fsck cannot read does not.
func TestGrowOffline_corrected_check(t *testing.T) {
	const mib = 1 << 20
	for _, tool := range []string{"mkfs.ext4", "debugfs", "e2fsck", "resize2fs", "dumpe2fs"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s: %v", tool, err)
		}
	}
	ctx := context.Background()
	img := filepath.Join(t.TempDir(), "ns.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 64*mib); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, "mkfs.ext4", "-q", "-F", img); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, "debugfs", "-w", "-R", "ssv free_blocks_count 7", img); err != nil {
		t.Fatal(err)
	}
	if err := growOffline(ctx, img, 128*mib); err != nil {
		t.Fatalf("grow after a corrected check: %v", err)
	}
	if size, err := fsBytes(ctx, img); err != nil || size != 128*mib {
		t.Fatalf("the file system is %d bytes (%v), want %d", size, err, 128*mib)
	}
	garbage := filepath.Join(t.TempDir(), "garbage.img")
	if err := os.WriteFile(garbage, make([]byte, mib), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := growOffline(ctx, garbage, 2*mib); err == nil {
		t.Fatal("an image with no file system grew")
	}
}

// A relative directory is made absolute, as the mount table names paths.
func TestNew_absolute_dir(t *testing.T) {
	t.Chdir(t.TempDir())
	s := New(Config{Dir: "shared"})
	if want, _ := filepath.Abs("shared"); s.cfg.Dir != want || !filepath.IsAbs(s.Path("team")) {
		t.Fatalf("dir %q, folder %q: want %q", s.cfg.Dir, s.Path("team"), want)
	}
}
