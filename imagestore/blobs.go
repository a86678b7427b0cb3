package imagestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-project/svc/imagestore/diskcheck"
)

// Errors of the store.
var (
	ErrBadDigest      = errors.New("malformed digest")
	ErrDigestMismatch = errors.New("content does not match its digest")
	ErrNotFound       = errors.New("blob not found")
)

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// ValidDigest reports whether d is "sha256:" and 64 lowercase hex digits.
func ValidDigest(d string) bool { return digestRE.MatchString(d) }

// InUse reports whether the cluster's records reference a blob.
type InUse func(digest string) bool

// Store is the blob directory of one peer.
//
// A blob's life: bytes are staged in a temporary file of the request's own,
// checked there, then committed under their digest with a lease that keeps
// the blob until its record is in the replicated state. Blobs are removed
// only by RemoveUnused and Collect, which skip a blob that is leased or that
// a record references, so one request's clean-up never takes a blob another
// request or record relies on.
type Store struct {
	dir string

	mu       sync.Mutex
	leases   map[string]int // digest -> open leases
	fetching map[string]*fetch
	// fetched counts the bytes received from peers, over every fetch.
	fetched atomic.Int64
}

// BlobDir is where the store in dir keeps its blobs.
func BlobDir(dir string) string { return filepath.Join(dir, "blobs", "sha256") }

// Open opens (or creates) a store in dir. The way to the blobs is
// searchable by others (mode 0711, not listable), so that QEMU, which runs
// as an unprivileged user, reaches the blob a VM starts from; the blobs
// themselves are root's alone (0600) until libvirt gives one to QEMU.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "blobs"), BlobDir(dir)} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
		if err := os.Chmod(d, 0o711); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	// Staged files of an earlier run are never finished.
	if tmps, err := os.ReadDir(filepath.Join(dir, "tmp")); err == nil {
		for _, e := range tmps {
			_ = os.Remove(filepath.Join(dir, "tmp", e.Name()))
		}
	}
	return &Store{dir: dir, leases: map[string]int{}, fetching: map[string]*fetch{}}, nil
}

// Path returns where the blob of digest lives (whether or not it is there).
func (s *Store) Path(digest string) string {
	return filepath.Join(BlobDir(s.dir), strings.TrimPrefix(digest, "sha256:"))
}

// Has reports whether the blob is here.
func (s *Store) Has(digest string) bool {
	if !ValidDigest(digest) {
		return false
	}
	_, err := os.Stat(s.Path(digest))
	return err == nil
}

// Open opens a blob for reading.
func (s *Store) Open(digest string) (*os.File, error) {
	if !ValidDigest(digest) {
		return nil, fmt.Errorf("%q: %w", digest, ErrBadDigest)
	}
	f, err := os.Open(s.Path(digest))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", digest, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("open blob: %w", err)
	}
	return f, nil
}

// Staged is a stream received into a temporary file of its own, not yet in
// the store: it can be inspected, then committed or discarded.
type Staged struct {
	s      *Store
	path   string
	Digest string
	Size   int64
	done   bool
}

// Stage streams r into a new temporary file, hashing it on the way.
func (s *Store) Stage(ctx context.Context, r io.Reader) (*Staged, error) {
	return s.StageNamed(ctx, r, nil)
}

// StageNamed is Stage that tells named (when set) the staging file's path
// before it writes to it (so that the writer's disk use can be counted).
func (s *Store) StageNamed(ctx context.Context, r io.Reader, named func(path string)) (*Staged, error) {
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-*")
	if err != nil {
		return nil, fmt.Errorf("stage blob: %w", err)
	}
	if named != nil {
		named(tmp.Name())
	}
	st := &Staged{s: s, path: tmp.Name()}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), ctxReader{ctx, r})
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		st.Discard()
		return nil, fmt.Errorf("stage blob: %w", err)
	}
	st.Digest, st.Size = "sha256:"+hex.EncodeToString(h.Sum(nil)), n
	return st, nil
}

// TempPath returns a new path in the store's staging directory, for a tool
// to write a file that StageFile then takes (qemu-img create or convert).
func (s *Store) TempPath(prefix string) (string, error) {
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), prefix+"-*")
	if err != nil {
		return "", fmt.Errorf("staging file: %w", err)
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return name, nil
}

// StageFile takes a file written at a TempPath as staged: it hashes it and
// syncs it to disk, without copying it.
func (s *Store) StageFile(ctx context.Context, path string) (*Staged, error) {
	if filepath.Dir(path) != filepath.Join(s.dir, "tmp") {
		return nil, fmt.Errorf("stage %s: not in the store's staging directory", path)
	}
	st := &Staged{s: s, path: path}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("stage %s: %w", path, err)
	}
	defer f.Close()
	// Flushing the file to disk is I/O, hashing it is CPU: one overlaps the other.
	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }()
	digest, n, err := HashReader(ctx, f)
	if serr := <-synced; err == nil {
		err = serr
	}
	if err != nil {
		st.Discard()
		return nil, fmt.Errorf("stage %s: %w", path, err)
	}
	st.Digest, st.Size = digest, n
	return st, nil
}

// Path is the staged file, for inspection before it is committed.
func (st *Staged) Path() string { return st.path }

// Discard removes the staged file; it does nothing after Commit.
func (st *Staged) Discard() {
	if st.done {
		return
	}
	st.done = true
	_ = os.Remove(st.path)
}

// Commit moves the staged file into the store under its digest (or drops it
// when the store holds that blob already) and leases the blob: it is not
// removed until the lease is released.
func (st *Staged) Commit() (*Lease, error) {
	if st.done {
		return nil, errors.New("commit blob: already committed or discarded")
	}
	st.done = true
	s := st.s
	dst := s.Path(st.Digest)
	s.mu.Lock()
	defer s.mu.Unlock()
	created := false
	if _, err := os.Stat(dst); err == nil {
		_ = os.Remove(st.path)
	} else {
		if err := os.Rename(st.path, dst); err != nil {
			_ = os.Remove(st.path)
			return nil, fmt.Errorf("commit blob: %w", err)
		}
		created = true
	}
	// The blob's grace period starts now, not at its last write (a disk
	// written chunk by chunk was last written before it was hashed and
	// checked): its record may not have reached this replica yet when the
	// lease ends.
	now := time.Now()
	_ = os.Chtimes(dst, now, now)
	s.leases[st.Digest]++
	return &Lease{s: s, digest: st.Digest, created: created}, nil
}

// Check vets a staged file before it is committed (diskcheck.Disk or ISO,
// for what the blob is used as); a refusal leaves nothing behind.
type Check func(ctx context.Context, path string) error

// Put stages r, checks it against want (when not empty) and with check
// (when not nil), and commits it; a mismatch or a refusal leaves nothing
// behind. The blob is not leased: callers reference it in the replicated
// state before its grace period ends.
func (s *Store) Put(ctx context.Context, r io.Reader, want string, check Check) (string, int64, error) {
	if want != "" && !ValidDigest(want) {
		return "", 0, fmt.Errorf("%q: %w", want, ErrBadDigest)
	}
	st, err := s.Stage(ctx, r)
	if err != nil {
		return "", 0, err
	}
	if want != "" && st.Digest != want {
		st.Discard()
		return "", st.Size, fmt.Errorf("got %s, want %s: %w", st.Digest, want, ErrDigestMismatch)
	}
	if check != nil {
		if err := check(ctx, st.Path()); err != nil {
			st.Discard()
			return "", st.Size, err
		}
	}
	l, err := st.Commit()
	if err != nil {
		return "", st.Size, err
	}
	l.Release()
	return st.Digest, st.Size, nil
}

// Lease keeps a blob in the store while a request relies on it.
type Lease struct {
	s       *Store
	digest  string
	created bool
	once    sync.Once
}

// Digest is the leased blob's digest.
func (l *Lease) Digest() string { return l.digest }

// Created reports whether the commit that made this lease wrote the blob (it
// was not in the store before).
func (l *Lease) Created() bool { return l.created }

// Release ends the lease; releasing twice does nothing.
func (l *Lease) Release() {
	l.once.Do(func() {
		l.s.mu.Lock()
		defer l.s.mu.Unlock()
		if l.s.leases[l.digest]--; l.s.leases[l.digest] <= 0 {
			delete(l.s.leases, l.digest)
		}
	})
}

// Lease leases a blob the store holds; it fails with ErrNotFound otherwise.
func (s *Store) Lease(digest string) (*Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.Has(digest) {
		return nil, fmt.Errorf("%s: %w", digest, ErrNotFound)
	}
	s.leases[digest]++
	return &Lease{s: s, digest: digest}, nil
}

// RemoveUnused removes a blob unless it is leased or inUse says a record
// references it. It reports whether it removed the blob.
func (s *Store) RemoveUnused(digest string, inUse InUse) (bool, error) {
	if !ValidDigest(digest) {
		return false, fmt.Errorf("%q: %w", digest, ErrBadDigest)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removeLocked(digest, inUse)
}

func (s *Store) removeLocked(digest string, inUse InUse) (bool, error) {
	if s.leases[digest] > 0 || inUse(digest) {
		return false, nil
	}
	if err := os.Remove(s.Path(digest)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("remove blob: %w", err)
	}
	_ = os.Remove(s.chunkIndexPath(digest)) // it may have none
	return true, nil
}

// Collect removes every blob that is not leased, that no record references
// and that is older than grace (so that a blob whose record is still on its
// way to this replica stays). It returns the digests it removed.
func (s *Store) Collect(inUse InUse, grace time.Duration) ([]string, error) {
	es, err := os.ReadDir(filepath.Join(s.dir, "blobs", "sha256"))
	if err != nil {
		return nil, fmt.Errorf("collect blobs: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range es {
		digest := "sha256:" + e.Name()
		if !ValidDigest(digest) {
			continue
		}
		s.mu.Lock()
		fi, err := os.Stat(s.Path(digest))
		if err == nil && time.Since(fi.ModTime()) >= grace {
			var ok bool
			ok, err = s.removeLocked(digest, inUse)
			if ok {
				removed = append(removed, digest)
			}
		}
		s.mu.Unlock()
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// Digests lists the blobs the store holds.
func (s *Store) Digests() ([]string, error) {
	es, err := os.ReadDir(filepath.Join(s.dir, "blobs", "sha256"))
	if err != nil {
		return nil, fmt.Errorf("list blobs: %w", err)
	}
	var out []string
	for _, e := range es {
		if d := "sha256:" + e.Name(); ValidDigest(d) {
			out = append(out, d)
		}
	}
	return out, nil
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// DiskSize is the size a guest sees of the disk image digest (its virtual
// size, from its header: microseconds; the file's own size when that
// cannot be read), and bound what a copy-on-write disk over it may take on
// the host: that size and room for the file's own tables (1/64; a qcow2's
// take under 1/500). 0 and 0 when the blob is not here.
func (s *Store) DiskSize(digest, format string) (size, bound int64) {
	if info, err := diskcheck.Header(s.Path(digest), format); err == nil && info.VirtualSize > 0 {
		size = info.VirtualSize
	} else if fi, err := os.Stat(s.Path(digest)); err == nil {
		size = fi.Size()
	}
	return size, size + size/64
}
