package ocidisk

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/pierrec/lz4/v4"
)

// Tart compresses disk chunks with Apple's Compression framework, whose
// LZ4 is framed its own way (not the LZ4 frame format): blocks "bv41"
// (decoded size, encoded size, then an LZ4 block), "bv4-" (size, then the
// bytes stored as they are), ended by "bv4$".

const (
	appleLZ4Compressed   = "bv41"
	appleLZ4Uncompressed = "bv4-"
	appleLZ4End          = "bv4$"
)

// errAppleLZ4 is wrapped by every malformed stream.
var errAppleLZ4 = errors.New("not an Apple LZ4 stream")

// decodeAppleLZ4 decodes src into dst, which must be exactly the decoded
// size (from the layer's uncompressed-size annotation).
func decodeAppleLZ4(dst, src []byte) error {
	out := 0
	for {
		if len(src) < 4 {
			return fmt.Errorf("%w: cut short at %d bytes of output", errAppleLZ4, out)
		}
		magic := string(src[:4])
		src = src[4:]
		switch magic {
		case appleLZ4End:
			if out != len(dst) {
				return fmt.Errorf("%w: %d bytes decoded, %d expected", errAppleLZ4, out, len(dst))
			}
			return nil
		case appleLZ4Uncompressed:
			if len(src) < 4 {
				return fmt.Errorf("%w: block header cut short", errAppleLZ4)
			}
			n := int(binary.LittleEndian.Uint32(src))
			src = src[4:]
			if n > len(src) || n > len(dst)-out {
				return fmt.Errorf("%w: a stored block of %d bytes overruns", errAppleLZ4, n)
			}
			out += copy(dst[out:], src[:n])
			src = src[n:]
		case appleLZ4Compressed:
			if len(src) < 8 {
				return fmt.Errorf("%w: block header cut short", errAppleLZ4)
			}
			dn, en := int(binary.LittleEndian.Uint32(src)), int(binary.LittleEndian.Uint32(src[4:]))
			src = src[8:]
			if en > len(src) || dn > len(dst)-out {
				return fmt.Errorf("%w: a block of %d→%d bytes overruns", errAppleLZ4, en, dn)
			}
			n, err := lz4.UncompressBlock(src[:en], dst[out:out+dn])
			if err != nil || n != dn {
				return fmt.Errorf("%w: a block decodes to %d bytes, not %d: %v", errAppleLZ4, n, dn, err)
			}
			out += dn
			src = src[en:]
		default:
			return fmt.Errorf("%w: block magic %q", errAppleLZ4, magic)
		}
	}
}
