package imagestore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A chunk index lists the digests of the fixed-size pieces a raw blob was
// cut into when it was pushed to or pulled from a registry, so that a later
// pull takes the pieces this peer already holds from disk instead of the
// network. It lives next to the blob store ("chunks/<hex>.json") and goes
// with its blob.

// IndexedChunk is one piece of a raw blob.
type IndexedChunk struct {
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Digest string `json:"digest"`
}

func (s *Store) chunkIndexPath(digest string) string {
	return filepath.Join(s.dir, "chunks", strings.TrimPrefix(digest, "sha256:")+".json")
}

// SaveChunks records the chunk index of a blob the store holds.
func (s *Store) SaveChunks(digest string, chunks []IndexedChunk) error {
	if !ValidDigest(digest) {
		return fmt.Errorf("%q: %w", digest, ErrBadDigest)
	}
	body, err := json.Marshal(chunks)
	if err != nil {
		return err
	}
	p := s.chunkIndexPath(digest)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("chunk index: %w", err)
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		return fmt.Errorf("chunk index: %w", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		return fmt.Errorf("chunk index: %w", err)
	}
	return nil
}

// ChunkFinder finds chunks in the blobs the store holds.
type ChunkFinder struct {
	s     *Store
	where map[string]chunkAt // chunk digest -> where
}

type chunkAt struct {
	blob         string
	offset, size int64
}

// Chunks reads the chunk indexes of the blobs the store holds now.
func (s *Store) Chunks() *ChunkFinder { return s.ChunksIn(nil) }

// ChunksIn is Chunks over the blobs allow accepts (every blob when allow is
// nil): a pull for a namespace takes chunks only from blobs that namespace
// may read, since a chunk digest a registry lists proves nothing about who
// may have those bytes.
func (s *Store) ChunksIn(allow func(blob string) bool) *ChunkFinder {
	f := &ChunkFinder{s: s, where: map[string]chunkAt{}}
	es, _ := os.ReadDir(filepath.Join(s.dir, "chunks"))
	for _, e := range es {
		hexd, ok := strings.CutSuffix(e.Name(), ".json")
		blob := "sha256:" + hexd
		if !ok || !ValidDigest(blob) || !s.Has(blob) || allow != nil && !allow(blob) {
			continue
		}
		body, err := os.ReadFile(filepath.Join(s.dir, "chunks", e.Name()))
		var cs []IndexedChunk
		if err != nil || json.Unmarshal(body, &cs) != nil {
			continue
		}
		for _, c := range cs {
			f.where[c.Digest] = chunkAt{blob: blob, offset: c.Offset, size: c.Size}
		}
	}
	return f
}

// Len is the number of chunks known.
func (f *ChunkFinder) Len() int { return len(f.where) }

// ReadChunk fills buf with the chunk whose sha256 is digest and reports
// whether it could: the chunk must be known, of len(buf) bytes, and still
// hash to its digest.
func (f *ChunkFinder) ReadChunk(digest string, buf []byte) bool {
	at, ok := f.where[digest]
	if !ok || at.size != int64(len(buf)) {
		return false
	}
	r, err := os.Open(f.s.Path(at.blob))
	if err != nil {
		return false
	}
	defer r.Close()
	if _, err := r.ReadAt(buf, at.offset); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	sum := sha256.Sum256(buf)
	return "sha256:"+hex.EncodeToString(sum[:]) == digest
}

// LoadChunks reads the chunk index of a blob (os.ErrNotExist when it has
// none).
func (s *Store) LoadChunks(digest string) ([]IndexedChunk, error) {
	if !ValidDigest(digest) {
		return nil, fmt.Errorf("%q: %w", digest, ErrBadDigest)
	}
	body, err := os.ReadFile(s.chunkIndexPath(digest))
	if err != nil {
		return nil, fmt.Errorf("chunk index: %w", err)
	}
	var cs []IndexedChunk
	if err := json.Unmarshal(body, &cs); err != nil {
		return nil, fmt.Errorf("chunk index of %s: %w", digest, err)
	}
	return cs, nil
}
