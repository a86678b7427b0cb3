package registrytest

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/pierrec/lz4/v4"
)

// Tart's media types and annotations, written here from Tart's format
// independently of the reader under test.
const (
	tartConfig       types.MediaType = "application/vnd.cirruslabs.tart.config.v1"
	tartDisk         types.MediaType = "application/vnd.cirruslabs.tart.disk.v2"
	tartNVRAM        types.MediaType = "application/vnd.cirruslabs.tart.nvram.v1"
	tartSize                         = "org.cirruslabs.tart.uncompressed-size"
	tartDigest                       = "org.cirruslabs.tart.uncompressed-content-digest"
	tartDiskSize                     = "org.cirruslabs.tart.uncompressed-disk-size"
	appleLZ4BlockLen                 = 64 << 10
)

// TartConfig is the part of Tart's VM config the tests write.
type TartConfig struct {
	Version       int    `json:"version"`
	OS            string `json:"os"`
	Arch          string `json:"arch"`
	CPUCount      int    `json:"cpuCount"`
	MemorySize    int64  `json:"memorySize"`
	MACAddress    string `json:"macAddress"`
	HardwareModel string `json:"hardwareModel,omitempty"`
}

// TartImage is a VM image in Tart's registry format, built by tests.
type TartImage struct {
	Config TartConfig
	Disk   []byte
	NVRAM  []byte
	// LayerSize cuts the disk into layers (Tart cuts 512 MiB ones).
	LayerSize int
	// ClaimDigest, when set, is written as every disk layer's
	// uncompressed digest instead of the layer's own: a registry that
	// lies about what its layers hold.
	ClaimDigest string
}

// PushTart pushes img to ref as tart push lays it out: a VM config layer,
// disk layers compressed with Apple's LZ4 framing and annotated with
// their uncompressed size and digest, and an NVRAM layer.
func PushTart(t testing.TB, ref name.Reference, img TartImage, opts ...remote.Option) {
	t.Helper()
	cfg, err := json.Marshal(img.Config)
	if err != nil {
		t.Fatal(err)
	}
	adds := []mutate.Addendum{{Layer: static.NewLayer(cfg, tartConfig), MediaType: tartConfig}}
	for off := 0; off < len(img.Disk); off += img.LayerSize {
		part := img.Disk[off:min(off+img.LayerSize, len(img.Disk))]
		z := AppleLZ4(part)
		sum := sha256.Sum256(part)
		digest := "sha256:" + hex.EncodeToString(sum[:])
		if img.ClaimDigest != "" {
			digest = img.ClaimDigest
		}
		adds = append(adds, mutate.Addendum{
			Layer: static.NewLayer(z, tartDisk), MediaType: tartDisk,
			Annotations: map[string]string{
				tartSize:   strconv.Itoa(len(part)),
				tartDigest: digest,
			},
		})
	}
	adds = append(adds, mutate.Addendum{Layer: static.NewLayer(img.NVRAM, tartNVRAM), MediaType: tartNVRAM})
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	out, err := mutate.Append(base, adds...)
	if err != nil {
		t.Fatal(err)
	}
	out, err = mutate.ConfigFile(out, &v1.ConfigFile{OS: img.Config.OS, Architecture: img.Config.Arch})
	if err != nil {
		t.Fatal(err)
	}
	out = mutate.Annotations(out, map[string]string{tartDiskSize: strconv.Itoa(len(img.Disk))}).(v1.Image)
	if err := remote.Write(ref, out, opts...); err != nil {
		t.Fatal(err)
	}
}

// AppleLZ4 frames src as Apple's Compression framework frames LZ4 (what
// Tart pushes): 64 KiB blocks, each "bv41" with its decoded and encoded
// sizes and an LZ4 block, or "bv4-" and the bytes as they are when they
// do not compress; "bv4$" ends the stream.
func AppleLZ4(src []byte) []byte {
	var out bytes.Buffer
	var c lz4.Compressor
	buf := make([]byte, lz4.CompressBlockBound(appleLZ4BlockLen))
	for len(src) > 0 {
		block := src[:min(len(src), appleLZ4BlockLen)]
		src = src[len(block):]
		n, err := c.CompressBlock(block, buf)
		if err != nil || n == 0 || n >= len(block) {
			out.WriteString("bv4-")
			out.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(block))))
			out.Write(block)
			continue
		}
		out.WriteString("bv41")
		out.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(block))))
		out.Write(binary.LittleEndian.AppendUint32(nil, uint32(n)))
		out.Write(buf[:n])
	}
	out.WriteString("bv4$")
	return out.Bytes()
}
