package ocidisk

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"

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
	// maxAppleLZ4Block bounds one block, compressed or decoded (Apple's
	// encoder writes 64 KiB blocks): what a decoder holds at once.
	maxAppleLZ4Block = 4 << 20
	// maxLZ4Ratio bounds how much an LZ4 block can expand (each byte of
	// input yields at most 255 of output, and a little header slack).
	maxLZ4Ratio = 255
)

// errAppleLZ4 is wrapped by every malformed stream (a bad image).
var errAppleLZ4 = fmt.Errorf("%w: not an Apple LZ4 stream", ErrBadImage)

// appleLZ4Decoder decodes Apple LZ4 streams block by block: its memory is
// two buffers of the largest block it has read (at most maxAppleLZ4Block
// each), never the size a stream announces.
type appleLZ4Decoder struct {
	src, dst []byte
}

// decode reads a stream from r and hands each decoded block to emit, in
// order; the stream must decode to exactly want bytes.
func (d *appleLZ4Decoder) decode(r io.Reader, want int64, emit func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var out int64
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(br, hdr[:4]); err != nil {
			return fmt.Errorf("%w: cut short at %d bytes of output: %v", errAppleLZ4, out, err)
		}
		switch magic := string(hdr[:4]); magic {
		case appleLZ4End:
			if out != want {
				return fmt.Errorf("%w: %d bytes decoded, %d expected", errAppleLZ4, out, want)
			}
			return nil
		case appleLZ4Uncompressed:
			if _, err := io.ReadFull(br, hdr[:4]); err != nil {
				return fmt.Errorf("%w: block header cut short", errAppleLZ4)
			}
			n := int64(binary.LittleEndian.Uint32(hdr[:4]))
			if n > maxAppleLZ4Block || n > want-out {
				return fmt.Errorf("%w: a stored block of %d bytes overruns", errAppleLZ4, n)
			}
			b := grow(&d.dst, int(n))
			if _, err := io.ReadFull(br, b); err != nil {
				return fmt.Errorf("%w: a stored block cut short: %v", errAppleLZ4, err)
			}
			if err := emit(b); err != nil {
				return err
			}
			out += n
		case appleLZ4Compressed:
			if _, err := io.ReadFull(br, hdr[:8]); err != nil {
				return fmt.Errorf("%w: block header cut short", errAppleLZ4)
			}
			dn, en := int64(binary.LittleEndian.Uint32(hdr[:4])), int64(binary.LittleEndian.Uint32(hdr[4:]))
			if en > maxAppleLZ4Block || dn > maxAppleLZ4Block || dn > want-out || dn > en*maxLZ4Ratio+16 {
				return fmt.Errorf("%w: a block of %d→%d bytes overruns", errAppleLZ4, en, dn)
			}
			z := grow(&d.src, int(en))
			if _, err := io.ReadFull(br, z); err != nil {
				return fmt.Errorf("%w: a block cut short: %v", errAppleLZ4, err)
			}
			b := grow(&d.dst, int(dn))
			n, err := lz4.UncompressBlock(z, b)
			if err != nil || int64(n) != dn {
				return fmt.Errorf("%w: a block decodes to %d bytes, not %d: %v", errAppleLZ4, n, dn, err)
			}
			if err := emit(b); err != nil {
				return err
			}
			out += dn
		default:
			return fmt.Errorf("%w: block magic %q", errAppleLZ4, magic)
		}
	}
}

// grow returns (*buf)[:n], growing the buffer when it is smaller.
func grow(buf *[]byte, n int) []byte {
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	return (*buf)[:n]
}
