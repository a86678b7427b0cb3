package imagestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func digestOf(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

func entries(t *testing.T, dir string) int {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func TestStore_put_cases(t *testing.T) {
	data := bytes.Repeat([]byte("svc"), 100000)
	cases := []struct {
		name    string
		want    string
		wantErr error
	}{
		{name: "no expected digest", want: ""},
		{name: "right digest", want: digestOf(data)},
		{name: "wrong digest", want: digestOf([]byte("other")), wantErr: ErrDigestMismatch},
		{name: "malformed digest", want: "md5:abc", wantErr: ErrBadDigest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			d, n, err := s.Put(context.Background(), bytes.NewReader(data), c.want, nil)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
			if c.wantErr != nil {
				if entries(t, filepath.Join(dir, "blobs", "sha256")) != 0 || entries(t, filepath.Join(dir, "tmp")) != 0 {
					t.Fatal("a refused blob left a file behind")
				}
				return
			}
			if d != digestOf(data) || n != int64(len(data)) || !s.Has(d) {
				t.Fatalf("digest %s size %d", d, n)
			}
			f, err := s.Open(d)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(f)
			f.Close()
			if !bytes.Equal(got, data) {
				t.Fatal("content differs")
			}
		})
	}
}

// serve answers blob requests from a map, counting requests.
func serve(t *testing.T, blobs map[string][]byte, hits *atomic.Int32) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		d := strings.TrimPrefix(r.URL.Path, "/api/v1/internal/blobs/")
		b, ok := blobs[d]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A blob the check refuses is not kept, and no other peer is asked for the
// same content.
func TestStore_fetch_refused_by_its_check(t *testing.T) {
	blob := bytes.Repeat([]byte("y"), 1<<20)
	d := digestOf(blob)
	var hits atomic.Int32
	a := serve(t, map[string][]byte{d: blob}, &hits)
	b := serve(t, map[string][]byte{d: blob}, &hits)
	dir := t.TempDir()
	s, _ := Open(dir)
	refusal := errors.New("it names a host file")
	checked := ""
	err := s.Fetch(context.Background(), http.DefaultClient, d, []string{a.URL, b.URL}, func(_ context.Context, path string) error {
		checked = path
		return refusal
	})
	if !errors.Is(err, ErrRefusedBlob) || !errors.Is(err, refusal) {
		t.Fatalf("err = %v", err)
	}
	if s.Has(d) || hits.Load() != 1 || entries(t, filepath.Join(dir, "tmp")) != 0 {
		t.Fatalf("has %v, %d peers asked, %d staging files", s.Has(d), hits.Load(), entries(t, filepath.Join(dir, "tmp")))
	}
	if filepath.Dir(checked) != filepath.Join(dir, "tmp") {
		t.Fatalf("the check saw %q, not the staged file", checked)
	}
}

func TestStore_fetch_cases(t *testing.T) {
	good := bytes.Repeat([]byte("x"), 1<<20)
	d := digestOf(good)
	var hits atomic.Int32
	right := serve(t, map[string][]byte{d: good}, &hits)
	lying := serve(t, map[string][]byte{d: []byte("not the blob")}, &hits)
	empty := serve(t, map[string][]byte{}, &hits)
	cases := []struct {
		name    string
		sources []string
		wantErr bool
	}{
		{name: "from a peer that has it", sources: []string{right.URL}},
		{name: "skips a peer without it", sources: []string{empty.URL, right.URL}},
		{name: "skips a peer that sends the wrong bytes", sources: []string{lying.URL, right.URL}},
		{name: "nobody has it", sources: []string{empty.URL, lying.URL}, wantErr: true},
		{name: "no source", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s, _ := Open(dir)
			err := s.Fetch(context.Background(), http.DefaultClient, d, c.sources, nil)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v", err)
			}
			if s.Has(d) == c.wantErr {
				t.Fatalf("has = %v", s.Has(d))
			}
			if entries(t, filepath.Join(dir, "tmp")) != 0 {
				t.Fatal("partial file left behind")
			}
		})
	}
}

func TestStore_fetch_cancelled_leaves_nothing(t *testing.T) {
	d := digestOf([]byte("never fully sent"))
	started := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("never "))
		w.(http.Flusher).Flush()
		close(started)
		<-r.Context().Done()
	}))
	defer srv.Close()
	dir := t.TempDir()
	s, _ := Open(dir)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if err := s.Fetch(ctx, http.DefaultClient, d, []string{srv.URL}, nil); err == nil {
		t.Fatal("a cancelled fetch succeeded")
	}
	if s.Has(d) || entries(t, filepath.Join(dir, "tmp")) != 0 {
		t.Fatal("a cancelled fetch left a file")
	}
}

func TestStore_concurrent_fetches_share_one_transfer(t *testing.T) {
	data := bytes.Repeat([]byte("y"), 4<<20)
	d := digestOf(data)
	var hits atomic.Int32
	srv := serve(t, map[string][]byte{d: data}, &hits)
	s, _ := Open(t.TempDir())
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Fetch(context.Background(), http.DefaultClient, d, []string{srv.URL}, nil); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if h := hits.Load(); h < 1 || h > 8 || !s.Has(d) {
		t.Fatalf("hits %d", h)
	}
}
