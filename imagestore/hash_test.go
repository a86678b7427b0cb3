package imagestore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestHashReader_sizes(t *testing.T) {
	for _, n := range []int{0, 1, hashChunk - 1, hashChunk, hashChunk + 1, (hashChunks+1)*hashChunk + 7} {
		data := make([]byte, n)
		_, _ = rand.Read(data)
		sum := sha256.Sum256(data)
		want := "sha256:" + hex.EncodeToString(sum[:])
		got, size, err := HashReader(context.Background(), bytes.NewReader(data))
		if err != nil || got != want || size != int64(n) {
			t.Errorf("%d bytes: %s %d %v, want %s", n, got, size, err, want)
		}
	}
}

type failingReader struct{ left int }

var errBroken = errors.New("broken disk")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.left <= 0 {
		return 0, errBroken
	}
	n := min(len(p), f.left)
	f.left -= n
	return n, nil
}

func TestHashReader_errors(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		r    io.Reader
		want error
	}{
		{"read error", context.Background(), &failingReader{left: 3*hashChunk + 5}, errBroken},
		{"canceled", canceled, bytes.NewReader(make([]byte, 10)), context.Canceled},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d, _, err := HashReader(c.ctx, c.r); !errors.Is(err, c.want) || d != "" {
				t.Fatalf("%q %v, want %v", d, err, c.want)
			}
		})
	}
}

// BenchmarkHashFile hashes a 256 MiB file in the page cache with hashReader
// and with a plain io.Copy into sha256, the baseline.
func BenchmarkHashFile(b *testing.B) {
	const size = 256 << 20
	p := filepath.Join(b.TempDir(), "f")
	data := make([]byte, size)
	_, _ = rand.Read(data)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		hash func(f *os.File) error
	}{
		{"pipelined", func(f *os.File) error { _, _, err := HashReader(context.Background(), f); return err }},
		{"io.Copy", func(f *os.File) error { _, err := io.Copy(sha256.New(), f); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(size)
			for range b.N {
				f, err := os.Open(p)
				if err != nil {
					b.Fatal(err)
				}
				if err := c.hash(f); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
