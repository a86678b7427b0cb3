package sharedstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/svc-project/svc/node/diskbudget"
)

// Config is a store's setting.
type Config struct {
	// Dir holds the images (<namespace>.img) and the folders they are
	// mounted on (<namespace>/).
	Dir string
	// UID and GID own each folder's root: the user the hypervisor serves
	// guests' files as.
	UID, GID int
	// Disk is the budget of the disk the folders are on: a folder's bound
	// is held in it before the folder is made or grown, and counted while
	// the folder may grow (nil: no bound but the free space).
	Disk *diskbudget.Budget
	Log  *slog.Logger
}

// Store keeps the shared folders of one host. Its methods may be called
// concurrently; changes of one store are made one at a time.
type Store struct {
	cfg Config
	mu  sync.Mutex
}

// New returns a store over cfg.Dir (made absolute: the mount table, which
// the store reads, names absolute paths).
func New(cfg Config) *Store {
	if abs, err := filepath.Abs(cfg.Dir); err == nil {
		cfg.Dir = abs
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Store{cfg: cfg}
	cfg.Disk.Register("shared folders", diskbudget.GrowerFunc(s.Growth))
	return s
}

// Growth is how much more the folders' images may take: each image is a
// sparse file of its folder's bound, of which it holds what is written.
func (s *Store) Growth() int64 {
	es, err := os.ReadDir(s.cfg.Dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), ".img") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		path := filepath.Join(s.cfg.Dir, e.Name())
		n += max(0, fi.Size()-diskbudget.Allocated(path))
	}
	return n
}

// commandTimeout bounds each command a store runs (mkfs, mount, umount,
// resize2fs).
const commandTimeout = 2 * time.Minute

// Probe returns nil when this host can keep shared folders: svc runs as
// root (it mounts them) and has the tools.
func (s *Store) Probe() error {
	if os.Geteuid() != 0 {
		return errors.New("the agent is not root: it cannot mount the namespaces' file systems")
	}
	for _, tool := range []string{"mkfs.ext4", "e2fsck", "dumpe2fs", "resize2fs", "mount", "umount", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is missing (e2fsprogs, mount)", tool)
		}
	}
	if err := os.MkdirAll(s.cfg.Dir, 0o711); err != nil {
		return fmt.Errorf("shared folders' directory: %w", err)
	}
	return nil
}

// minRoom is the free space under which a host offers no shared storage.
const minRoom = 1 << 30

// Room returns nil while the file system of the folders has room for one
// (1 GiB free), or says how little it has.
func (s *Store) Room() error {
	free, err := freeBytes(s.cfg.Dir)
	if err != nil {
		return err
	}
	if s.cfg.Disk != nil {
		r, err := s.cfg.Disk.Room()
		if err != nil {
			return err
		}
		free = min(free, r.Room)
	}
	if free < minRoom {
		return fmt.Errorf("no room: %s free for shared folders", gib(free))
	}
	return nil
}

func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// holdRoom holds the room img (sparse) needs to become a folder of size
// bytes, beside what the disk has promised already (the folders' growth
// counts an image's old bound): a guest would otherwise meet I/O errors
// from the host rather than a full folder, or fill the disk the cluster's
// log is on. Without a budget it checks the free space alone. Release the
// hold once the image has its new size.
func (s *Store) holdRoom(ns, img string, size int64) (*diskbudget.Hold, error) {
	var bound, used int64
	var st syscall.Stat_t
	if err := syscall.Stat(img, &st); err == nil {
		bound, used = st.Size, st.Blocks*512
	}
	if s.cfg.Disk != nil {
		return s.cfg.Disk.Reserve(fmt.Sprintf("namespace %s's shared folder of %s", ns, gib(size)), max(0, size-bound), "")
	}
	free, err := freeBytes(filepath.Dir(img))
	if err != nil {
		return nil, err
	}
	if need := size - used; need > free {
		return nil, fmt.Errorf("no room: the folder may grow to %s, the host has %s free", gib(size), gib(free+used))
	}
	return nil, nil
}

// Path is the folder of namespace ns.
func (s *Store) Path(ns string) string { return filepath.Join(s.cfg.Dir, ns) }

func (s *Store) image(ns string) string { return filepath.Join(s.cfg.Dir, ns+".img") }

// Ensure makes ns's folder ready with a bound of maxBytes: its file system
// made (or grown to a larger bound) and mounted. A mounted folder grows in
// place where the host lets svc resize a mounted file system, otherwise
// when it is next mounted; a smaller bound applies from its next Clear.
func (s *Store) Ensure(ctx context.Context, ns string, maxBytes int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ensure(ctx, ns, maxBytes)
}

func (s *Store) ensure(ctx context.Context, ns string, maxBytes int64) error {
	img, dir := s.image(ns), s.Path(ns)
	_, err := os.Stat(img)
	switch {
	case errors.Is(err, os.ErrNotExist):
		hold, err := s.holdRoom(ns, img, maxBytes)
		if err != nil {
			return fmt.Errorf("shared folder of %s: %w", ns, err)
		}
		defer hold.Release()
		if err := s.makeFS(ctx, img, maxBytes); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("shared folder of %s: %w", ns, err)
	}
	size, err := fsBytes(ctx, img)
	if err != nil {
		return fmt.Errorf("shared folder of %s: %w", ns, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("shared folder of %s: %w", ns, err)
	}
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	grow := size < maxBytes
	if grow {
		hold, err := s.holdRoom(ns, img, maxBytes)
		if err != nil {
			return fmt.Errorf("grow the shared folder of %s: %w", ns, err)
		}
		defer hold.Release()
	}
	switch {
	case !mounted:
		if err := s.shareDir(); err != nil {
			return fmt.Errorf("shared folder of %s: %w", ns, err)
		}
		// Unmounted, the image may still be attached to a loop device a
		// moment (or, held in another mount namespace, for good): growing
		// it then would write under a live file system, and mount would
		// take that file system back as it was.
		switch err := waitDetached(ctx, img); {
		case errors.Is(err, errImageInUse) && grow:
			s.cfg.Log.Warn("shared folder not grown; it grows when next mounted", "namespace", ns, "err", err)
		case err != nil && !errors.Is(err, errImageInUse):
			return fmt.Errorf("shared folder of %s: %w", ns, err)
		case grow:
			if err := growOffline(ctx, img, maxBytes); err != nil {
				return fmt.Errorf("grow the shared folder of %s: %w", ns, err)
			}
			s.cfg.Log.Info("shared folder grown", "namespace", ns, "bytes", maxBytes)
		}
		if err := run(ctx, "mount", "-t", "ext4", "-o", "loop,nodev,nosuid,noexec", img, dir); err != nil {
			return fmt.Errorf("shared folder of %s: %w", ns, err)
		}
		s.cfg.Log.Info("shared folder mounted", "namespace", ns, "dir", dir)
	case grow:
		// Growing a mounted ext4 takes CAP_SYS_RESOURCE; without it the
		// folder keeps its size until it is next mounted.
		if err := growOnline(ctx, dir, img, maxBytes); err != nil {
			s.cfg.Log.Warn("shared folder not grown while mounted; it grows when next mounted", "namespace", ns, "err", err)
		} else {
			s.cfg.Log.Info("shared folder grown", "namespace", ns, "bytes", maxBytes)
		}
	}
	// The hypervisor's user owns the root (mkfs made it so; a folder
	// chowned by hand is put right).
	return os.Chown(dir, s.cfg.UID, s.cfg.GID)
}

// fsBytes is the size of the file system in img, from its superblock.
func fsBytes(ctx context.Context, img string) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "dumpe2fs", "-h", img).Output()
	if err != nil {
		return 0, fmt.Errorf("dumpe2fs %s: %w", img, err)
	}
	var blocks, size int64
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "Block count":
			blocks, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		case "Block size":
			size, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	if blocks <= 0 || size <= 0 {
		return 0, fmt.Errorf("dumpe2fs %s: no block count and size", img)
	}
	return blocks * size, nil
}

// growOffline grows an unmounted image and its file system to size bytes.
func growOffline(ctx context.Context, img string, size int64) error {
	if err := os.Truncate(img, size); err != nil {
		return err
	}
	// resize2fs wants a checked file system; -p repairs only what is safe.
	if err := fsck(ctx, img); err != nil {
		return err
	}
	return run(ctx, "resize2fs", img)
}

// fsck checks the unmounted image img, repairing what is safe. e2fsck's
// exit status 1 (errors corrected: e.g. it recovered the journal of a file
// system whose loop device was still being released) and 2 (the same, a
// reboot advised for a mounted root) leave a checked file system; 4 and
// above do not (e2fsck(8)).
func fsck(ctx context.Context, img string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "e2fsck", "-f", "-p", img).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() >= 1 && exit.ExitCode() <= 2 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("e2fsck: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// growOnline grows a mounted image: its loop device learns the new size,
// then the mounted file system grows into it.
func growOnline(ctx context.Context, dir, img string, size int64) error {
	dev := loopOf(dir)
	if dev == "" {
		return fmt.Errorf("no loop device is mounted on %s", dir)
	}
	if err := os.Truncate(img, size); err != nil {
		return err
	}
	if err := run(ctx, "losetup", "--set-capacity", dev); err != nil {
		return err
	}
	return run(ctx, "resize2fs", dev)
}

// makeFS writes a new sparse image of size bytes holding an empty ext4 file
// system whose root belongs to the configured user.
func (s *Store) makeFS(ctx context.Context, img string, size int64) error {
	tmp := img + ".new"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("shared folder image: %w", err)
	}
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = run(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-E",
			"root_owner="+strconv.Itoa(s.cfg.UID)+":"+strconv.Itoa(s.cfg.GID)+",lazy_itable_init=1,lazy_journal_init=1", tmp)
	}
	if err == nil {
		err = os.Rename(tmp, img) // a crash before this leaves no half-made image
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("shared folder image: %w", err)
	}
	return nil
}

// Folder returns ns's folder, made ready with a bound of maxBytes (Ensure).
func (s *Store) Folder(ctx context.Context, ns string, maxBytes int64) (string, error) {
	if err := s.Ensure(ctx, ns, maxBytes); err != nil {
		return "", err
	}
	return s.Path(ns), nil
}

// Usage returns what ns's folder holds, in bytes, and false when it has no
// mounted folder here.
func (s *Store) Usage(ns string) (int64, bool) {
	dir := s.Path(ns)
	if ok, err := isMountPoint(dir); err != nil || !ok {
		return 0, false
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Blocks-st.Bfree) * int64(st.Bsize), true
}

// Clear empties ns's folder: a fresh file system with the bound maxBytes.
// The caller makes sure no VM uses it (its QEMU keeps the folder busy).
func (s *Store) Clear(ctx context.Context, ns string, maxBytes int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.remove(ctx, ns); err != nil {
		return err
	}
	return s.ensure(ctx, ns, maxBytes)
}

// Remove unmounts and deletes ns's folder, if it has one here.
func (s *Store) Remove(ctx context.Context, ns string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.remove(ctx, ns)
	s.unshareDirOrWarn()
	return err
}

// unshareDirOrWarn is unshareDirIfIdle, its failure logged.
func (s *Store) unshareDirOrWarn() {
	if err := s.unshareDirIfIdle(); err != nil {
		s.cfg.Log.Warn("shared folders' directory", "dir", s.cfg.Dir, "err", err)
	}
}

func (s *Store) remove(ctx context.Context, ns string) error {
	dir := s.Path(ns)
	mounted, err := isMountPoint(dir)
	if err != nil {
		return err
	}
	if mounted {
		if err := run(ctx, "umount", dir); err != nil {
			return fmt.Errorf("shared folder of %s: %w", ns, err)
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shared folder of %s: %w", ns, err)
	}
	if err := os.Remove(s.image(ns)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shared folder of %s: %w", ns, err)
	}
	s.cfg.Log.Info("shared folder removed", "namespace", ns)
	return nil
}

// Namespaces names the namespaces that have a folder here, sorted.
func (s *Store) Namespaces() ([]string, error) {
	entries, err := os.ReadDir(s.cfg.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shared folders: %w", err)
	}
	var out []string
	for _, e := range entries {
		if ns, ok := strings.CutSuffix(e.Name(), ".img"); ok && !e.IsDir() {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out, nil
}

// isMountPoint reports whether dir is mounted on (its device differs from
// its parent's).
func isMountPoint(dir string) (bool, error) {
	var st, parent syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := syscall.Stat(filepath.Dir(dir), &parent); err != nil {
		return false, fmt.Errorf("stat %s: %w", filepath.Dir(dir), err)
	}
	return st.Dev != parent.Dev, nil
}

// run runs a command, its output in the error when it fails.
func run(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Release unmounts every folder of the store, and its directory's bind on
// itself where there is one, for a host torn down once its VMs are gone: a
// stopped peer leaves mounted a folder a guest still used. The images stay.
func (s *Store) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	nss, err := s.Namespaces()
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range nss {
		errs = append(errs, s.unmount(ns))
	}
	return errors.Join(append(errs, s.unshareDirIfIdle())...)
}

// Unmount unmounts ns's folder, if it is mounted; its image stays.
func (s *Store) Unmount(ns string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.unmount(ns); err != nil {
		return err
	}
	s.unshareDirOrWarn()
	return nil
}

// unmount unmounts ns's folder, if it is mounted.
func (s *Store) unmount(ns string) error {
	dir := s.Path(ns)
	if ok, err := isMountPoint(dir); err != nil || !ok {
		return err
	}
	if err := syscall.Unmount(dir, 0); err != nil {
		return fmt.Errorf("unmount the shared folder of %s: %w", ns, err)
	}
	return nil
}
