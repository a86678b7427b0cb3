package ocidisk

import (
	"encoding/json"
	"fmt"
	"strconv"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types and annotations of a disk in a registry.
const (
	// MediaTypeConfig is the config blob: a Config in JSON.
	MediaTypeConfig types.MediaType = "application/vnd.svc.disk.config.v1+json"
	// MediaTypeChunk is one chunk of the disk, compressed with zstd.
	MediaTypeChunk types.MediaType = "application/vnd.svc.disk.chunk.v1.raw+zstd"

	// AnnotationOffset is a chunk's byte offset in the disk.
	AnnotationOffset = "dev.svc.disk.chunk.offset"
	// AnnotationSize is a chunk's uncompressed size.
	AnnotationSize = "dev.svc.disk.chunk.size"
	// AnnotationDigest is the sha256 of a chunk's uncompressed bytes.
	AnnotationDigest = "dev.svc.disk.chunk.digest"
)

// Kinds of disk.
const (
	KindImage = "image"
	KindISO   = "iso"
)

// DefaultChunkSize is the uncompressed size of a chunk (see docs/registry.md
// for the measurements behind it).
const DefaultChunkSize = 64 << 20

// maxChunks bounds the layers of a manifest this package reads: 64 TiB of
// 64 MiB chunks.
const maxChunks = 1 << 20

// Bounds of what a config may say: a pull sizes its buffers by the chunk
// size and its file by the virtual size, so a registry's config must not
// make a peer allocate what it likes.
const (
	// MaxChunkSize is the largest chunk a peer pushes (--chunk-mib 512).
	MaxChunkSize = 512 << 20
	// MaxVirtualSize is the largest disk: 64 TiB.
	MaxVirtualSize = 64 << 40
)

// Config describes a disk; it is the manifest's config blob.
type Config struct {
	// Kind is KindImage or KindISO.
	Kind string `json:"kind"`
	// Arch is the architecture the disk boots on (amd64, arm64); empty for ISOs.
	Arch string `json:"arch,omitempty"`
	// Format is the layout of the uncompressed chunks put end to end: "raw".
	Format string `json:"format"`
	// VirtualSize is the disk's size in bytes; ranges no chunk covers are zeros.
	VirtualSize int64 `json:"virtualSize"`
	// Digest is the sha256 ("sha256:...") of the whole uncompressed disk.
	Digest string `json:"digest"`
	// ChunkSize is the uncompressed size of every chunk but the last.
	ChunkSize int64 `json:"chunkSize"`
	// Description is the image's description.
	Description string `json:"description,omitempty"`
	// CPU and MemoryBytes are hints: what the VM was deployed with.
	CPU         int   `json:"cpu,omitempty"`
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
}

// Chunk is one layer of a disk.
type Chunk struct {
	Offset int64
	Size   int64
	// Digest is the sha256 of the uncompressed bytes.
	Digest string
	// Layer is the compressed blob's descriptor.
	Layer v1.Descriptor
}

func (c Config) validate() error {
	switch {
	case c.Kind != KindImage && c.Kind != KindISO:
		return badImage("disk config: kind %q is neither %q nor %q", c.Kind, KindImage, KindISO)
	case c.Format != "raw":
		return badImage("disk config: format %q is not raw", c.Format)
	case c.VirtualSize <= 0 || c.ChunkSize <= 0:
		return badImage("disk config: virtual size %d and chunk size %d must be positive", c.VirtualSize, c.ChunkSize)
	case c.VirtualSize > MaxVirtualSize || c.ChunkSize > MaxChunkSize:
		return badImage("disk config: virtual size %d and chunk size %d must be at most %d and %d", c.VirtualSize, c.ChunkSize, int64(MaxVirtualSize), MaxChunkSize)
	case !validDigest(c.Digest):
		return badImage("disk config: digest %q is not sha256:<64 hex digits>", c.Digest)
	}
	return nil
}

func validDigest(d string) bool {
	h, err := v1.NewHash(d)
	return err == nil && h.Algorithm == "sha256"
}

// chunksOf reads the chunks from a manifest's layers and checks that they
// lie inside the disk, in order, without overlapping.
func chunksOf(m *v1.Manifest, cfg Config) ([]Chunk, error) {
	if len(m.Layers) > maxChunks {
		return nil, badImage("manifest has %d layers, over %d", len(m.Layers), maxChunks)
	}
	out := make([]Chunk, 0, len(m.Layers))
	var end int64
	for i, l := range m.Layers {
		if l.MediaType != MediaTypeChunk {
			return nil, badImage("layer %d has media type %q, not %q", i, l.MediaType, MediaTypeChunk)
		}
		off, err1 := strconv.ParseInt(l.Annotations[AnnotationOffset], 10, 64)
		size, err2 := strconv.ParseInt(l.Annotations[AnnotationSize], 10, 64)
		d := l.Annotations[AnnotationDigest]
		if err1 != nil || err2 != nil || !validDigest(d) || off < end || size <= 0 || size > cfg.ChunkSize || off+size > cfg.VirtualSize {
			return nil, badImage("layer %d: bad chunk annotations %v", i, l.Annotations)
		}
		end = off + size
		out = append(out, Chunk{Offset: off, Size: size, Digest: d, Layer: l})
	}
	return out, nil
}

// rawManifest is a manifest ready to be put: its bytes and media type.
type rawManifest struct {
	body []byte
	mt   types.MediaType
}

func (r rawManifest) RawManifest() ([]byte, error)        { return r.body, nil }
func (r rawManifest) MediaType() (types.MediaType, error) { return r.mt, nil }

// manifestOf builds the manifest of a disk from its config blob's
// descriptor and its chunks.
func manifestOf(config v1.Descriptor, chunks []Chunk) (rawManifest, error) {
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        config,
		Layers:        make([]v1.Descriptor, 0, len(chunks)),
	}
	for _, c := range chunks {
		l := c.Layer
		l.MediaType = MediaTypeChunk
		l.Annotations = map[string]string{
			AnnotationOffset: strconv.FormatInt(c.Offset, 10),
			AnnotationSize:   strconv.FormatInt(c.Size, 10),
			AnnotationDigest: c.Digest,
		}
		m.Layers = append(m.Layers, l)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return rawManifest{}, fmt.Errorf("encode manifest: %w", err)
	}
	return rawManifest{body: b, mt: types.OCIManifestSchema1}, nil
}
