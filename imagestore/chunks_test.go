package imagestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestStore_Chunks_cases(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, b := bytes.Repeat([]byte("a"), 4096), bytes.Repeat([]byte("b"), 4096)
	digest, _, err := s.Put(context.Background(), bytes.NewReader(append(append([]byte{}, a...), b...)), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SaveChunks(digest, []IndexedChunk{{0, 4096, sum(a)}, {4096, 4096, sum(b)}, {8192, 4096, sum([]byte("gone"))}}); err != nil {
		t.Fatal(err)
	}
	f := s.Chunks()
	buf := make([]byte, 4096)
	for _, c := range []struct {
		name   string
		digest string
		size   int
		want   []byte
	}{
		{"first", sum(a), 4096, a},
		{"second", sum(b), 4096, b},
		{"unknown", sum([]byte("x")), 4096, nil},
		{"other size", sum(a), 100, nil},
		{"past the end", sum([]byte("gone")), 4096, nil},
	} {
		got := f.ReadChunk(c.digest, buf[:c.size])
		if got != (c.want != nil) || (got && !bytes.Equal(buf[:c.size], c.want)) {
			t.Errorf("%s: found %v", c.name, got)
		}
	}
	// a pull for a namespace that may not read the blob finds none of it
	if got := s.ChunksIn(func(blob string) bool { return blob != digest }).ReadChunk(sum(a), buf); got {
		t.Error("a chunk of a blob the caller may not read was found")
	}
	if got := s.ChunksIn(func(blob string) bool { return blob == digest }).ReadChunk(sum(a), buf); !got {
		t.Error("a chunk of a blob the caller may read was not found")
	}
	if ok, err := s.RemoveUnused(digest, func(string) bool { return false }); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if n := s.Chunks().Len(); n != 0 {
		t.Fatalf("%d chunks known after the blob went", n)
	}
}
