package swarm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/svc-project/svc/imagestore"
)

// Chunk sizes: a blob is cut into about targetChunks pieces of a power of
// two between MinChunk and MaxChunk (64 MiB for blobs of 4 GiB and more).
const (
	MinChunk     = 1 << 20
	MaxChunk     = 64 << 20
	targetChunks = 64
	// MaxChunks bounds a plan (4 TiB in chunks of 64 MiB).
	MaxChunks = 1 << 16
)

// ErrBadPlan is wrapped when a plan does not describe its blob.
var ErrBadPlan = errors.New("bad chunk plan")

// Chunk is one piece of a blob: Digest is the sha256 of its bytes.
type Chunk = imagestore.IndexedChunk

// Plan is how a blob is cut into chunks.
type Plan struct {
	Digest string  `json:"digest"`
	Size   int64   `json:"size"`
	Chunks []Chunk `json:"chunks"`
}

// ChunkSizeFor is the chunk size of a blob of size bytes.
func ChunkSizeFor(size int64) int64 {
	c := int64(MinChunk)
	for c < MaxChunk && c*targetChunks < size {
		c *= 2
	}
	return c
}

// Key names the plan in the tracker: the blob and how it is cut (two
// plans of one blob share no chunk numbers).
func (p Plan) Key() string {
	h := sha256.New()
	for _, c := range p.Chunks {
		_, _ = io.WriteString(h, strconv.FormatInt(c.Offset, 10)+","+strconv.FormatInt(c.Size, 10)+","+c.Digest+";")
	}
	return p.Digest + "." + hex.EncodeToString(h.Sum(nil))[:16]
}

// ScopedKey is the tracker's name of a plan fetched for scope (Job.Scope):
// the plan's key alone for no scope, "<scope>/<key>" for a namespace, so
// that the pulls of two namespaces never meet in one swarm.
func ScopedKey(scope, key string) string {
	if scope == "" {
		return key
	}
	return scope + "/" + key
}

// Validate checks that the chunks lie in the blob in order, without
// overlap, each at most MaxChunk, with sha256 digests. Gaps between them
// are zeros (a sparse disk's holes travel as nothing).
func (p Plan) Validate() error {
	if !imagestore.ValidDigest(p.Digest) {
		return fmt.Errorf("%w: %q is not a sha256 digest", ErrBadPlan, p.Digest)
	}
	if p.Size < 0 || len(p.Chunks) > MaxChunks {
		return fmt.Errorf("%w: %d chunks for %d bytes (at most %d)", ErrBadPlan, len(p.Chunks), p.Size, MaxChunks)
	}
	var end int64
	for i, c := range p.Chunks {
		if c.Offset < end || c.Size <= 0 || c.Size > MaxChunk || c.Offset+c.Size > p.Size || !imagestore.ValidDigest(c.Digest) {
			return fmt.Errorf("%w: chunk %d (offset %d, %d bytes, %q) is not after %d within %d bytes", ErrBadPlan, i, c.Offset, c.Size, c.Digest, end, p.Size)
		}
		end = c.Offset + c.Size
	}
	return nil
}

// index returns where each chunk starts (offset -> chunk number).
func (p Plan) index() map[int64]int {
	m := make(map[int64]int, len(p.Chunks))
	for i, c := range p.Chunks {
		m[c.Offset] = i
	}
	return m
}

// Cut reads the blob at path and makes its plan (chunks of
// ChunkSizeFor(size); chunks of zeros are left out).
func Cut(ctx context.Context, path, digest string) (Plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return Plan{}, fmt.Errorf("cut %s: %w", digest, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Plan{}, fmt.Errorf("cut %s: %w", digest, err)
	}
	p := Plan{Digest: digest, Size: st.Size()}
	size := ChunkSizeFor(p.Size)
	buf := make([]byte, min(size, p.Size))
	for off := int64(0); off < p.Size; off += size {
		if err := ctx.Err(); err != nil {
			return Plan{}, err
		}
		n := min(size, p.Size-off)
		if _, err := f.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return Plan{}, fmt.Errorf("cut %s: %w", digest, err)
		}
		if allZero(buf[:n]) {
			continue
		}
		sum := sha256.Sum256(buf[:n])
		p.Chunks = append(p.Chunks, Chunk{Offset: off, Size: n, Digest: "sha256:" + hex.EncodeToString(sum[:])})
	}
	return p, nil
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
