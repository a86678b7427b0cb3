package ocidisk

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/klauspost/compress/zstd"
)

// ChunkReader reads single chunks of an svc disk from its registry, for a
// pull that takes most chunks from elsewhere (node/swarm). Its methods
// may be called by several goroutines at once.
type ChunkReader struct {
	r      Resolved
	puller *remote.Puller
	at     map[int64]int // offset -> chunk
	decs   sync.Pool
	bytes  atomic.Int64
}

// NewChunkReader returns a reader of r's chunks.
func NewChunkReader(ctx context.Context, r Resolved, reg Registry) (*ChunkReader, error) {
	if !r.SVCDisk() {
		return nil, fmt.Errorf("%s is not an svc disk", r.Ref)
	}
	puller, err := remote.NewPuller(reg.options(ctx)...)
	if err != nil {
		return nil, err
	}
	cr := &ChunkReader{r: r, puller: puller, at: make(map[int64]int, len(r.Chunks))}
	for i, c := range r.Chunks {
		cr.at[c.Offset] = i
	}
	return cr, nil
}

// Read fills buf with the chunk at offset, decompressed (its compressed
// bytes checked against the layer digest; the caller checks the rest).
func (cr *ChunkReader) Read(ctx context.Context, offset int64, buf []byte) error {
	i, ok := cr.at[offset]
	if !ok || cr.r.Chunks[i].Size != int64(len(buf)) {
		return fmt.Errorf("%s has no chunk of %d bytes at %d", cr.r.Ref, len(buf), offset)
	}
	c := cr.r.Chunks[i]
	dec, _ := cr.decs.Get().(*zstd.Decoder)
	if dec == nil {
		var err error
		dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(cr.r.Config.ChunkSize)+1<<20))
		if err != nil {
			return err
		}
	}
	defer cr.decs.Put(dec)
	zbuf := make([]byte, 0, c.Size+c.Size/64+1<<16)
	return fetchChunk(ctx, cr.puller, cr.r.Ref.Context(), dec, c, buf, zbuf, &cr.bytes)
}

// BytesFetched is the compressed bytes read from the registry so far.
func (cr *ChunkReader) BytesFetched() int64 { return cr.bytes.Load() }
