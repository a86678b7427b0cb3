package imagestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
)

type fetch struct {
	done     chan struct{}
	err      error
	received atomic.Int64 // bytes of the blob received so far
}

// Received returns how many bytes of digest the fetch under way has
// received (0 when none is under way).
func (s *Store) Received(digest string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.fetching[digest]; ok {
		return f.received.Load()
	}
	return 0
}

// FetchedBytes returns the bytes this store received from peers, over
// every fetch since it opened.
func (s *Store) FetchedBytes() int64 { return s.fetched.Load() }

// counting counts what passes through it into the fetch and the store.
type counting struct {
	r    io.Reader
	f    *fetch
	into *atomic.Int64
}

func (c counting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.f.received.Add(int64(n))
	c.into.Add(int64(n))
	return n, err
}

// BlobPath is the peer API path that serves a blob.
func BlobPath(digest string) string { return "/api/v1/internal/blobs/" + digest }

// ErrRefusedBlob is wrapped when a peer's blob fails the check it is
// fetched with: the content is the digest's, so no other peer is asked.
var ErrRefusedBlob = errors.New("the blob was refused")

// Fetch makes sure the blob is here, streaming it from the first of sources
// (peer API base URLs) that serves it and checking it with check before it
// is kept: a blob a peer holds is vetted again by each peer it goes to.
// Concurrent fetches of one digest share one transfer.
func (s *Store) Fetch(ctx context.Context, client *http.Client, digest string, sources []string, check Check) error {
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
	f.err = s.fetch(ctx, f, client, digest, sources, check)
	s.mu.Lock()
	delete(s.fetching, digest)
	s.mu.Unlock()
	close(f.done)
	return f.err
}

func (s *Store) fetch(ctx context.Context, f *fetch, client *http.Client, digest string, sources []string, check Check) error {
	if len(sources) == 0 {
		return fmt.Errorf("fetch %s: no peer holds it", digest)
	}
	var errs []error
	for _, src := range sources {
		f.received.Store(0)
		err := s.fetchFrom(ctx, f, client, digest, src, check)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil || errors.Is(err, ErrRefusedBlob) {
			break
		}
	}
	return fmt.Errorf("fetch %s: %w", digest, errors.Join(errs...))
}

func (s *Store) fetchFrom(ctx context.Context, f *fetch, client *http.Client, digest, src string, check Check) error {
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
	refusing := func(ctx context.Context, path string) error {
		if check == nil {
			return nil
		}
		if err := check(ctx, path); err != nil {
			return fmt.Errorf("%w: %w", ErrRefusedBlob, err)
		}
		return nil
	}
	if _, _, err := s.Put(ctx, counting{r: resp.Body, f: f, into: &s.fetched}, digest, refusing); err != nil {
		return fmt.Errorf("from %s: %w", src, err)
	}
	return nil
}
