package ocidisk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/klauspost/compress/zstd"
)

// maxConfig bounds a disk config blob.
const maxConfig = 64 << 10

// chunkAttempts is how often a chunk is tried before a pull fails.
const chunkAttempts = 3

// Resolved is what a reference names, read from the registry without its
// disk: enough to record an image before any peer holds it.
type Resolved struct {
	Ref name.Reference
	// ManifestDigest is the manifest's digest: what the reference resolved to.
	ManifestDigest string
	// Config and Chunks describe an svc disk; Tart is set instead for a
	// Tart VM image, ContainerDisk for any other image, read as a KubeVirt
	// containerDisk.
	Config        Config
	Chunks        []Chunk
	Tart          *Tart
	ContainerDisk bool
}

// SVCDisk reports whether r is an svc disk, whose digest is known before
// it is pulled (Config.Digest).
func (r Resolved) SVCDisk() bool { return !r.ContainerDisk && r.Tart == nil }

// Resolve reads the manifest (and config) that ref names.
func Resolve(ctx context.Context, ref name.Reference, reg Registry) (Resolved, error) {
	puller, err := remote.NewPuller(reg.options(ctx)...)
	if err != nil {
		return Resolved{}, err
	}
	desc, err := puller.Get(ctx, ref)
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: %w", ref, err)
	}
	out := Resolved{Ref: ref, ManifestDigest: desc.Digest.String()}
	if !desc.MediaType.IsImage() {
		out.ContainerDisk = true // an index: the platform is picked when pulled
		return out, nil
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: %w", ref, badImage("the manifest: %v", err))
	}
	if isTart(&m) {
		out.Tart, err = resolveTart(ctx, puller, ref, &m)
		if err != nil {
			return Resolved{}, fmt.Errorf("resolve %s: %w", ref, err)
		}
		return out, nil
	}
	if m.Config.MediaType != MediaTypeConfig {
		out.ContainerDisk = true
		return out, nil
	}
	if m.Config.Size > maxConfig {
		return Resolved{}, fmt.Errorf("resolve %s: %w", ref, badImage("the disk config is %d bytes, over %d", m.Config.Size, maxConfig))
	}
	l, err := puller.Layer(ctx, ref.Context().Digest(m.Config.Digest.String()))
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: the disk config: %w", ref, err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: the disk config: %w", ref, err)
	}
	defer rc.Close()
	body, err := io.ReadAll(io.LimitReader(rc, maxConfig))
	if err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: the disk config: %w", ref, err)
	}
	if err := json.Unmarshal(body, &out.Config); err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: %w", ref, badImage("the disk config: %v", err))
	}
	if err := out.Config.validate(); err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: %w", ref, err)
	}
	if out.Chunks, err = chunksOf(&m, out.Config); err != nil {
		return Resolved{}, fmt.Errorf("resolve %s: %w", ref, err)
	}
	return out, nil
}

// ChunkSource finds a chunk this peer already holds: it fills buf with the
// bytes whose sha256 is digest and tells whether it could.
type ChunkSource interface {
	ReadChunk(digest string, buf []byte) bool
}

// PullResult says what a pull fetched.
type PullResult struct {
	// ChunksFetched and BytesFetched count what came from the registry
	// (compressed bytes); ChunksLocal the chunks found on this peer;
	// ChunksResumed those an earlier, interrupted pull had written.
	ChunksFetched, ChunksLocal, ChunksResumed int
	BytesFetched                              int64
}

// Disk is what PullInto writes a disk into. Its methods are called by
// several goroutines at once.
type Disk interface {
	// File is the disk's file, of the disk's size, whose unwritten ranges
	// read as zeros.
	File() *os.File
	// Written reports whether an earlier pull wrote the range whole.
	Written(off, size int64) bool
	// Clear makes a range read as zeros before it is written.
	Clear(off, size int64) error
	// Wrote records that the range is written whole.
	Wrote(off, size int64) error
}

// newFile is a Disk that starts empty and records nothing.
type newFile struct{ f *os.File }

func (d newFile) File() *os.File          { return d.f }
func (newFile) Written(int64, int64) bool { return false }
func (newFile) Clear(int64, int64) error  { return nil }
func (newFile) Wrote(int64, int64) error  { return nil }

// Pull writes the svc disk r describes into the file at dst (created or
// truncated), as PullInto does.
func Pull(ctx context.Context, r Resolved, reg Registry, dst string, local ChunkSource, progress Progress) (PullResult, error) {
	f, err := os.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return PullResult{}, fmt.Errorf("pull: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(r.Config.VirtualSize); err != nil {
		return PullResult{}, fmt.Errorf("pull: %w", err)
	}
	return PullInto(ctx, r, reg, newFile{f}, local, progress)
}

// PullInto writes the svc disk r describes into d: chunks in parallel,
// each checked against its layer digest as it arrives, zeros left as
// holes; a chunk d has from an earlier pull, or that local holds, is not
// fetched. The caller checks the whole file against r.Config.Digest (which
// is what vouches for the uncompressed content).
func PullInto(ctx context.Context, r Resolved, reg Registry, d Disk, local ChunkSource, progress Progress) (PullResult, error) {
	if r.ContainerDisk {
		return PullResult{}, errors.New("pull: a containerDisk image is read with PullContainerDisk")
	}
	f := d.File()
	puller, err := remote.NewPuller(reg.options(ctx)...)
	if err != nil {
		return PullResult{}, err
	}
	var fetched, localN, resumed, bytesN, done atomic.Int64
	report := progress.serial()
	report(0, r.Config.VirtualSize)
	err = parallel(ctx, reg.jobs(), len(r.Chunks), func(ctx context.Context, next <-chan int) error {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(r.Config.ChunkSize)+1<<20))
		if err != nil {
			return err
		}
		defer dec.Close()
		// Buffers of the largest chunk the manifest has (each is at most
		// the config's chunk size, which is bounded).
		size := largestChunk(r.Chunks)
		buf := make([]byte, size)
		zbuf := make([]byte, 0, size+size/64+1<<16)
		for i := range next {
			c := r.Chunks[i]
			if d.Written(c.Offset, c.Size) {
				resumed.Add(1)
				report(done.Add(c.Size), r.Config.VirtualSize)
				continue
			}
			b := buf[:c.Size]
			if local != nil && local.ReadChunk(c.Digest, b) {
				localN.Add(1)
			} else if err := fetchChunk(ctx, puller, r.Ref.Context(), dec, c, b, zbuf, &bytesN); err != nil {
				return fmt.Errorf("chunk at %d: %w", c.Offset, err)
			} else {
				fetched.Add(1)
			}
			if err := d.Clear(c.Offset, c.Size); err != nil {
				return err
			}
			if err := WriteSparse(f, b, c.Offset); err != nil {
				return err
			}
			if err := d.Wrote(c.Offset, c.Size); err != nil {
				return err
			}
			report(done.Add(c.Size), r.Config.VirtualSize)
		}
		return nil
	})
	res := PullResult{ChunksFetched: int(fetched.Load()), ChunksLocal: int(localN.Load()), ChunksResumed: int(resumed.Load()), BytesFetched: bytesN.Load()}
	if err != nil {
		return res, fmt.Errorf("pull %s: %w", r.Ref, err)
	}
	if err := f.Sync(); err != nil {
		return res, fmt.Errorf("pull: %w", err)
	}
	report(r.Config.VirtualSize, r.Config.VirtualSize)
	return res, nil
}

// fetchChunk reads one chunk from the registry into b (its compressed form
// into zbuf), decompressed and checked, trying again on a failure.
func fetchChunk(ctx context.Context, puller *remote.Puller, repo name.Repository, dec *zstd.Decoder, c Chunk, b, zbuf []byte, n *atomic.Int64) error {
	var err error
	for range chunkAttempts {
		if err = ctx.Err(); err != nil {
			return err
		}
		if err = fetchOnce(ctx, puller, repo, dec, c, b, zbuf, n); err == nil {
			return nil
		}
	}
	return err
}

func fetchOnce(ctx context.Context, puller *remote.Puller, repo name.Repository, dec *zstd.Decoder, c Chunk, b, zbuf []byte, n *atomic.Int64) error {
	if c.Layer.Size > int64(cap(zbuf)) {
		return fmt.Errorf("the compressed chunk is %d bytes, over %d", c.Layer.Size, cap(zbuf))
	}
	l, err := puller.Layer(ctx, repo.Digest(c.Layer.Digest.String()))
	if err != nil {
		return err
	}
	rc, err := l.Compressed() // checked against the layer's digest as it is read
	if err != nil {
		return err
	}
	defer rc.Close()
	z := zbuf[:c.Layer.Size]
	if _, err := io.ReadFull(&countingReader{ReadCloser: rc, n: n}, z); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, rc); err != nil { // the digest check happens at the end
		return err
	}
	out, err := dec.DecodeAll(z, b[:0]) // into b unless it is longer than announced
	if err != nil {
		return fmt.Errorf("decompress: %w", err)
	}
	if len(out) != len(b) {
		return fmt.Errorf("decompress: %d bytes, not the %d announced", len(out), len(b))
	}
	// The compressed bytes were checked against the layer's digest; what
	// they decompress to is checked with the whole disk, by the caller.
	return nil
}

// sparseBlock is the unit WriteSparse skips when it is all zeros.
const sparseBlock = 64 << 10

// WriteSparse writes b at off, leaving blocks of zeros unwritten (the file
// was truncated to its size, so they read as zeros).
func WriteSparse(f *os.File, b []byte, off int64) error {
	for start := 0; start < len(b); {
		end := min(start+sparseBlock, len(b))
		if allZero(b[start:end]) {
			start = end
			continue
		}
		// Extend over the following non-zero blocks: one write for a run.
		for end < len(b) && !allZero(b[end:min(end+sparseBlock, len(b))]) {
			end = min(end+sparseBlock, len(b))
		}
		if _, err := f.WriteAt(b[start:end], off+int64(start)); err != nil {
			return fmt.Errorf("write the disk: %w", err)
		}
		start = end
	}
	return nil
}

// MaxTags bounds the tags ListTags returns for one repository.
const MaxTags = 200

// ListTags lists a repository's tags (at most MaxTags, in the registry's order).
func ListTags(ctx context.Context, repo name.Repository, reg Registry) ([]string, error) {
	tags, err := remote.List(repo, reg.options(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("list the tags of %s: %w", repo, err)
	}
	if len(tags) > MaxTags {
		tags = tags[:MaxTags]
	}
	return tags, nil
}

// largestChunk is the size of the largest of chunks.
func largestChunk(chunks []Chunk) int64 {
	var n int64
	for _, c := range chunks {
		n = max(n, c.Size)
	}
	return n
}
