package imagestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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

// Store is the blob directory of one peer.
type Store struct {
	dir string

	mu       sync.Mutex
	fetching map[string]*fetch
}

type fetch struct {
	done chan struct{}
	err  error
}

// Open opens (or creates) a store in dir.
func Open(dir string) (*Store, error) {
	for _, d := range []string{filepath.Join(dir, "blobs", "sha256"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("image store: %w", err)
		}
	}
	// Partial files of an earlier run are never finished.
	if tmps, err := os.ReadDir(filepath.Join(dir, "tmp")); err == nil {
		for _, e := range tmps {
			_ = os.Remove(filepath.Join(dir, "tmp", e.Name()))
		}
	}
	return &Store{dir: dir, fetching: map[string]*fetch{}}, nil
}

// Path returns where the blob of digest lives (whether or not it is there).
func (s *Store) Path(digest string) string {
	return filepath.Join(s.dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
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

// Put streams r into the store and returns its digest and size. want, when
// not empty, is the digest r must have; a mismatch leaves nothing behind.
func (s *Store) Put(ctx context.Context, r io.Reader, want string) (string, int64, error) {
	if want != "" && !ValidDigest(want) {
		return "", 0, fmt.Errorf("%q: %w", want, ErrBadDigest)
	}
	tmp, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), "blob-*")
	if err != nil {
		return "", 0, fmt.Errorf("put blob: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), ctxReader{ctx, r})
	if err != nil {
		return "", n, fmt.Errorf("put blob: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return "", n, fmt.Errorf("put blob: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", n, fmt.Errorf("put blob: %w", err)
	}
	digest := "sha256:" + hex.EncodeToString(h.Sum(nil))
	if want != "" && digest != want {
		return "", n, fmt.Errorf("got %s, want %s: %w", digest, want, ErrDigestMismatch)
	}
	if err := os.Rename(tmp.Name(), s.Path(digest)); err != nil {
		return "", n, fmt.Errorf("put blob: %w", err)
	}
	ok = true
	return digest, n, nil
}

// Remove deletes a blob; a missing blob is not an error.
func (s *Store) Remove(digest string) error {
	if !ValidDigest(digest) {
		return fmt.Errorf("%q: %w", digest, ErrBadDigest)
	}
	if err := os.Remove(s.Path(digest)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove blob: %w", err)
	}
	return nil
}

// Fetch makes sure the blob is here, streaming it from the first of sources
// (peer API base URLs) that serves it. Concurrent fetches of one digest share
// one transfer.
func (s *Store) Fetch(ctx context.Context, client *http.Client, digest string, sources []string) error {
	if s.Has(digest) {
		return nil
	}
	s.mu.Lock()
	if f, ok := s.fetching[digest]; ok {
		s.mu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f := &fetch{done: make(chan struct{})}
	s.fetching[digest] = f
	s.mu.Unlock()
	f.err = s.fetch(ctx, client, digest, sources)
	s.mu.Lock()
	delete(s.fetching, digest)
	s.mu.Unlock()
	close(f.done)
	return f.err
}

func (s *Store) fetch(ctx context.Context, client *http.Client, digest string, sources []string) error {
	if len(sources) == 0 {
		return fmt.Errorf("fetch %s: no peer holds it", digest)
	}
	var errs []error
	for _, src := range sources {
		err := s.fetchFrom(ctx, client, digest, src)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("fetch %s: %w", digest, errors.Join(errs...))
}

func (s *Store) fetchFrom(ctx context.Context, client *http.Client, digest, src string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(src, "/")+BlobPath(digest), nil)
	if err != nil {
		return fmt.Errorf("from %s: %w", src, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("from %s: %w", src, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("from %s: %s", src, resp.Status)
	}
	if _, _, err := s.Put(ctx, resp.Body, digest); err != nil {
		return fmt.Errorf("from %s: %w", src, err)
	}
	return nil
}

// BlobPath is the peer API path that serves a blob.
func BlobPath(digest string) string { return "/api/v1/internal/blobs/" + digest }

// Info is what qemu-img says of a disk image.
type Info struct {
	Format      string `json:"format"`
	VirtualSize int64  `json:"virtual-size"`
	BackingFile string `json:"backing-filename"`
}

// Inspect reads a disk image's format and virtual size with qemu-img.
func Inspect(ctx context.Context, path string) (Info, error) {
	out, err := exec.CommandContext(ctx, "qemu-img", "info", "--output=json", path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return Info{}, fmt.Errorf("qemu-img info: %w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return Info{}, fmt.Errorf("qemu-img info: %w", err)
	}
	var info Info
	if err := json.Unmarshal(out, &info); err != nil {
		return Info{}, fmt.Errorf("qemu-img info: %w", err)
	}
	return info, nil
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
