package ocidisk

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Mac users keep macOS (and Linux) VM images in registries in Tart's
// format: a VM config layer (JSON), the raw disk cut into layers of at most
// 512 MiB each compressed with Apple's LZ4 framing, and the NVRAM (a macOS
// guest's auxiliary storage, a Linux guest's EFI variables) as a layer of
// its own. Each disk layer is annotated with its uncompressed size and
// digest.
const (
	MediaTypeTartConfig types.MediaType = "application/vnd.cirruslabs.tart.config.v1"
	MediaTypeTartDisk   types.MediaType = "application/vnd.cirruslabs.tart.disk.v2"
	MediaTypeTartNVRAM  types.MediaType = "application/vnd.cirruslabs.tart.nvram.v1"
	// MediaTypeTartDiskV1 is the format Tart stopped reading; refused.
	MediaTypeTartDiskV1 types.MediaType = "application/vnd.cirruslabs.tart.disk.v1"

	AnnotationTartUncompressedSize   = "org.cirruslabs.tart.uncompressed-size"
	AnnotationTartUncompressedDigest = "org.cirruslabs.tart.uncompressed-content-digest"
	AnnotationTartDiskSize           = "org.cirruslabs.tart.uncompressed-disk-size"
)

// Bounds of a Tart image.
const (
	// maxTartLayer bounds a disk layer's uncompressed size (Tart cuts 512
	// MiB layers).
	maxTartLayer = 512 << 20
	// maxTartNVRAM bounds the NVRAM layer.
	maxTartNVRAM = 64 << 20
	// tartWorkers is how many disk layers a pull fetches at once (each
	// holds a layer's bytes twice).
	tartWorkers = 2
)

// TartConfig is what svc reads of a Tart VM config.
type TartConfig struct {
	Version int `json:"version"`
	// OS is "darwin" or "linux"; Arch "arm64" or "amd64".
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUCount   int    `json:"cpuCount"`
	MemorySize int64  `json:"memorySize"`
	// HardwareModel (base64) is a macOS guest's Mac platform.
	HardwareModel string `json:"hardwareModel,omitempty"`
	DiskFormat    string `json:"diskFormat,omitempty"`
}

// TartLayer is one disk layer.
type TartLayer struct {
	Layer            v1.Descriptor
	Offset, Size     int64 // in the disk, uncompressed
	UncompressedHash string
}

// Tart is a resolved Tart image.
type Tart struct {
	Config   TartConfig
	Disk     []TartLayer
	DiskSize int64
	NVRAM    v1.Descriptor
}

// isTart reports whether a manifest is Tart's.
func isTart(m *v1.Manifest) bool {
	for _, l := range m.Layers {
		if l.MediaType == MediaTypeTartConfig {
			return true
		}
	}
	return false
}

// resolveTart reads a Tart manifest's layers and its VM config.
func resolveTart(ctx context.Context, puller *remote.Puller, ref name.Reference, m *v1.Manifest) (*Tart, error) {
	if len(m.Layers) > maxChunks {
		return nil, badImage("tart image: %d layers, over %d", len(m.Layers), maxChunks)
	}
	t := &Tart{}
	var config *v1.Descriptor
	nvrams := 0
	for i, l := range m.Layers {
		switch l.MediaType {
		case MediaTypeTartConfig:
			config = &m.Layers[i]
		case MediaTypeTartNVRAM:
			t.NVRAM, nvrams = l, nvrams+1
		case MediaTypeTartDisk:
			size, err := strconv.ParseInt(l.Annotations[AnnotationTartUncompressedSize], 10, 64)
			d := l.Annotations[AnnotationTartUncompressedDigest]
			if err != nil || size <= 0 || size > maxTartLayer || !validDigest(d) {
				return nil, badImage("tart image: disk layer %d: bad annotations %v", i, l.Annotations)
			}
			t.Disk = append(t.Disk, TartLayer{Layer: l, Offset: t.DiskSize, Size: size, UncompressedHash: d})
			t.DiskSize += size
		case MediaTypeTartDiskV1:
			return nil, badImage("tart image: the disk is in Tart's old format (%s); push it again with a current Tart", l.MediaType)
		}
	}
	switch {
	case config == nil || config.Size > maxConfig:
		return nil, badImage("tart image: no VM config layer of at most %d bytes", maxConfig)
	case len(t.Disk) == 0 || t.DiskSize > MaxVirtualSize:
		return nil, badImage("tart image: %d disk layers of %d bytes: at least one, at most %d bytes", len(t.Disk), t.DiskSize, int64(MaxVirtualSize))
	case nvrams != 1 || t.NVRAM.Size > maxTartNVRAM:
		return nil, badImage("tart image: %d NVRAM layers: want one of at most %d bytes", nvrams, maxTartNVRAM)
	}
	body, err := fetchBlob(ctx, puller, ref.Context(), *config, maxConfig)
	if err != nil {
		return nil, fmt.Errorf("tart image: the VM config: %w", err)
	}
	if err := json.Unmarshal(body, &t.Config); err != nil {
		return nil, badImage("tart image: the VM config: %v", err)
	}
	c := t.Config
	switch {
	case c.OS != "darwin" && c.OS != "linux":
		return nil, badImage("tart image: guest OS %q is not darwin or linux", c.OS)
	case c.Arch != "arm64" && c.Arch != "amd64":
		return nil, badImage("tart image: arch %q is not arm64 or amd64", c.Arch)
	case c.DiskFormat != "" && c.DiskFormat != "raw":
		return nil, badImage("tart image: disk format %q: svc takes raw disks (push with tart's --disk-format raw)", c.DiskFormat)
	case len(c.HardwareModel) > 4096:
		return nil, badImage("tart image: a hardware model of %d bytes", len(c.HardwareModel))
	}
	return t, nil
}

// pullTartLayer streams one disk layer from the registry, decodes it block
// by block into f at the layer's offset (sparse) and checks it against its
// uncompressed digest: memory bounded by a block, whatever the layer's
// annotation says of its size (the digest of the compressed bytes is
// checked as the stream ends).
func pullTartLayer(ctx context.Context, puller *remote.Puller, repo name.Repository, dec *appleLZ4Decoder, l TartLayer, f *os.File) error {
	layer, err := puller.Layer(ctx, repo.Digest(l.Layer.Digest.String()))
	if err != nil {
		return err
	}
	rc, err := layer.Compressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	sum := sha256.New()
	off := l.Offset
	err = dec.decode(io.LimitReader(rc, l.Layer.Size), l.Size, func(b []byte) error {
		sum.Write(b)
		if err := WriteSparse(f, b, off); err != nil {
			return err
		}
		off += int64(len(b))
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, rc); err != nil { // the compressed digest is checked at the end
		return err
	}
	if got := "sha256:" + hex.EncodeToString(sum.Sum(nil)); got != l.UncompressedHash {
		return badImage("decodes to %s, not %s", got, l.UncompressedHash)
	}
	return nil
}

// fetchBlob reads a small blob whole (checked against its digest).
func fetchBlob(ctx context.Context, puller *remote.Puller, repo name.Repository, d v1.Descriptor, limit int64) ([]byte, error) {
	if d.Size > limit {
		return nil, badImage("%d bytes, over %d", d.Size, limit)
	}
	l, err := puller.Layer(ctx, repo.Digest(d.Digest.String()))
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b := make([]byte, d.Size)
	if _, err := io.ReadFull(rc, b); err != nil {
		return nil, err
	}
	if _, err := io.Copy(io.Discard, rc); err != nil { // the digest is checked at the end
		return nil, err
	}
	return b, nil
}

// PullTart writes a Tart image's disk to dst (raw, sparse) and its NVRAM
// to nvram, each disk layer decoded and checked against its uncompressed
// digest. Both files are new; on error they are removed.
func PullTart(ctx context.Context, r Resolved, reg Registry, dst, nvram string, progress Progress) (err error) {
	t := r.Tart
	if t == nil {
		return fmt.Errorf("pull %s: not a Tart image", r.Ref)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(dst)
			_ = os.Remove(nvram)
		}
	}()
	puller, err := remote.NewPuller(reg.options(ctx)...)
	if err != nil {
		return err
	}
	repo := r.Ref.Context()
	nv, err := fetchBlob(ctx, puller, repo, t.NVRAM, maxTartNVRAM)
	if err != nil {
		return fmt.Errorf("pull %s: the NVRAM: %w", r.Ref, err)
	}
	if err := os.WriteFile(nvram, nv, 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(t.DiskSize); err != nil {
		return err
	}
	var done atomic.Int64
	report := progress.serial()
	err = parallel(ctx, tartWorkers, len(t.Disk), func(ctx context.Context, next <-chan int) error {
		var dec appleLZ4Decoder // its buffers are this worker's, bounded by a block
		for i := range next {
			l := t.Disk[i]
			if l.Layer.Size > l.Size+l.Size/64+4096 {
				return badImage("disk layer %d: %d compressed bytes for %d", i, l.Layer.Size, l.Size)
			}
			if err := pullTartLayer(ctx, puller, repo, &dec, l, f); err != nil {
				return fmt.Errorf("disk layer %d: %w", i, err)
			}
			report(done.Add(l.Size), t.DiskSize)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pull %s: %w", r.Ref, err)
	}
	return f.Close()
}
