package ocidisk

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"

	"github.com/svc-project/svc/imagestore"
)

// Progress is told how many of the disk's bytes are done. Calls come one at
// a time, with done never going back.
type Progress func(done, total int64)

// serial makes a Progress that several goroutines may call: it passes on
// one call at a time and only values that grow. nil stays a no-op.
func (p Progress) serial() func(done, total int64) {
	var mu sync.Mutex
	var last int64 = -1
	return func(done, total int64) {
		if p == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if done > last {
			last = done
			p(done, total)
		}
	}
}

// PushResult says what a push did.
type PushResult struct {
	// ManifestDigest is the pushed manifest's digest (sha256:...).
	ManifestDigest string
	Config         Config
	// Chunks are the disk's chunks that are not all zeros.
	Chunks []Chunk
	// ChunksSent and BytesSent count the chunks the registry lacked and the
	// compressed bytes uploaded; the others it had already.
	ChunksSent int
	BytesSent  int64
}

// Push sends the raw disk at path to ref. cfg gives the kind, arch,
// description and hints; Push fills in the size, chunk size and, unless cfg
// has it (a blob already known by its digest), the disk's digest. A chunk
// the registry already holds is not sent again, so a push that was
// interrupted sends only what is missing when it is run again.
func Push(ctx context.Context, ref name.Reference, reg Registry, path string, cfg Config, progress Progress) (PushResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	cfg.Format, cfg.VirtualSize = "raw", st.Size()
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	pusher, err := remote.NewPusher(reg.options(ctx)...)
	if err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	// The whole disk's digest is read next to the chunks (page cache).
	type hashed struct {
		digest string
		err    error
	}
	digest := make(chan hashed, 1)
	if cfg.Digest == "" {
		go func() {
			g, err := os.Open(path)
			if err != nil {
				digest <- hashed{err: err}
				return
			}
			defer g.Close()
			d, _, err := imagestore.HashReader(ctx, g)
			digest <- hashed{d, err}
		}()
	} else {
		digest <- hashed{digest: cfg.Digest}
	}
	res, err := pushChunks(ctx, pusher, ref.Context(), reg.jobs(), f, cfg, progress)
	h := <-digest
	if err == nil && h.err != nil {
		err = fmt.Errorf("hash the disk: %w", h.err)
	}
	cfg.Digest = h.digest
	if err != nil {
		return PushResult{}, err
	}
	if err := cfg.validate(); err != nil {
		return PushResult{}, err
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return PushResult{}, fmt.Errorf("encode the disk config: %w", err)
	}
	cl := static.NewLayer(body, MediaTypeConfig)
	if err := pusher.Upload(ctx, ref.Context(), cl); err != nil {
		return PushResult{}, fmt.Errorf("upload the disk config: %w", err)
	}
	m, err := manifestOf(v1.Descriptor{MediaType: MediaTypeConfig, Size: int64(len(body)), Digest: sha256Hash(body)}, res.Chunks)
	if err != nil {
		return PushResult{}, err
	}
	if err := pusher.Put(ctx, ref, m); err != nil {
		return PushResult{}, fmt.Errorf("put the manifest: %w", err)
	}
	res.Config, res.ManifestDigest = cfg, sha256Hash(m.body).String()
	return res, nil
}

func sha256Hash(b []byte) v1.Hash {
	sum := sha256.Sum256(b)
	return v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(sum[:])}
}

// pushChunks cuts the disk into chunks, compresses and uploads those that
// are not all zeros, jobs at a time, and returns them in disk order.
func pushChunks(ctx context.Context, pusher *remote.Pusher, repo name.Repository, jobs int, f *os.File, cfg Config, progress Progress) (PushResult, error) {
	n := int((cfg.VirtualSize + cfg.ChunkSize - 1) / cfg.ChunkSize)
	if n > maxChunks {
		return PushResult{}, fmt.Errorf("push: %d chunks, over %d", n, maxChunks)
	}
	chunks := make([]*Chunk, n)
	var sent, sentChunks, done atomic.Int64
	report := progress.serial()
	err := parallel(ctx, jobs, n, func(ctx context.Context, next <-chan int) error {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return err
		}
		defer enc.Close()
		// Buffers of the largest chunk this disk has, not of the chunk
		// size: a small disk takes little memory whatever the setting.
		size := min(cfg.ChunkSize, cfg.VirtualSize)
		buf := make([]byte, size)
		// Incompressible data grows a little under zstd: room for it, so
		// that a chunk is compressed without regrowing its output.
		zbuf := make([]byte, 0, size+size/64+1<<16)
		for i := range next {
			off := int64(i) * cfg.ChunkSize
			size := min(cfg.ChunkSize, cfg.VirtualSize-off)
			c, err := pushChunk(ctx, pusher, repo, enc, f, buf[:size], zbuf, off, &sent, &sentChunks)
			if err != nil {
				return fmt.Errorf("chunk at %d: %w", off, err)
			}
			chunks[i] = c
			report(done.Add(size), cfg.VirtualSize)
		}
		return nil
	})
	if err != nil {
		return PushResult{}, err
	}
	res := PushResult{ChunksSent: int(sentChunks.Load()), BytesSent: sent.Load()}
	for _, c := range chunks {
		if c != nil {
			res.Chunks = append(res.Chunks, *c)
		}
	}
	return res, nil
}

// pushChunk reads one chunk into buf and uploads it compressed (into zbuf)
// unless it is all zeros (nil) or the registry has it.
func pushChunk(ctx context.Context, pusher *remote.Pusher, repo name.Repository, enc *zstd.Encoder, f *os.File, buf, zbuf []byte, off int64, sent, sentChunks *atomic.Int64) (*Chunk, error) {
	if hole(f, off, int64(len(buf))) {
		return nil, nil
	}
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if allZero(buf) {
		return nil, nil
	}
	sum := sha256.Sum256(buf)
	z := enc.EncodeAll(buf, zbuf[:0])
	zd := sha256Hash(z)
	l := &countedLayer{Layer: hashedLayer{b: z, digest: zd}, sent: sent, chunks: sentChunks}
	if err := pusher.Upload(ctx, repo, l); err != nil {
		return nil, err
	}
	return &Chunk{
		Offset: off, Size: int64(len(buf)), Digest: "sha256:" + hex.EncodeToString(sum[:]),
		Layer: v1.Descriptor{MediaType: MediaTypeChunk, Size: int64(len(z)), Digest: zd},
	}, nil
}

// hole tells whether [off, off+size) of f holds no data (a sparse hole).
func hole(f *os.File, off, size int64) bool {
	data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	if err != nil {
		return errors.Is(err, unix.ENXIO) // no data after off at all
	}
	return data >= off+size
}

// allZero tells whether b holds only zeros: its first byte is zero and each
// byte equals the one before (one memcmp).
func allZero(b []byte) bool {
	return len(b) == 0 || b[0] == 0 && bytes.Equal(b[1:], b[:len(b)-1])
}

// hashedLayer is a compressed chunk in memory whose digest is computed once
// (the uploader asks for it several times).
type hashedLayer struct {
	b      []byte
	digest v1.Hash
}

func (l hashedLayer) Digest() (v1.Hash, error) { return l.digest, nil }

// DiffID is the digest too: a chunk is no file system layer.
func (l hashedLayer) DiffID() (v1.Hash, error) { return l.digest, nil }
func (l hashedLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(l.b)), nil
}
func (l hashedLayer) Uncompressed() (io.ReadCloser, error) { return l.Compressed() }
func (l hashedLayer) Size() (int64, error)                 { return int64(len(l.b)), nil }
func (l hashedLayer) MediaType() (types.MediaType, error)  { return MediaTypeChunk, nil }

// countedLayer counts the compressed bytes the uploader reads: only chunks
// the registry lacked are read.
type countedLayer struct {
	v1.Layer
	sent, chunks *atomic.Int64
}

func (l *countedLayer) Compressed() (io.ReadCloser, error) {
	rc, err := l.Layer.Compressed()
	if err != nil {
		return nil, err
	}
	l.chunks.Add(1)
	return &countingReader{ReadCloser: rc, n: l.sent}, nil
}

// MediaType keeps the chunk's media type visible through the wrapper.
func (l *countedLayer) MediaType() (types.MediaType, error) { return MediaTypeChunk, nil }

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}
