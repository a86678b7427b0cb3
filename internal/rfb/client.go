package rfb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ServerInit is what a server says of its screen after ClientInit.
type ServerInit struct {
	Width, Height int
	BitsPerPixel  int
	Name          string
}

// ClientInit asks to share the screen and reads the server's ServerInit.
func ClientInit(c io.ReadWriter) (ServerInit, error) {
	raw, err := ClientInitRaw(c)
	if err != nil {
		return ServerInit{}, err
	}
	return ServerInit{
		Width: int(binary.BigEndian.Uint16(raw[0:2])), Height: int(binary.BigEndian.Uint16(raw[2:4])),
		BitsPerPixel: int(raw[4]), Name: string(raw[24:]),
	}, nil
}

// maxDesktopName bounds the desktop name of a ServerInit.
const maxDesktopName = 1 << 16

// ClientInitRaw asks to share the screen and returns the server's
// ServerInit as it was sent (24 bytes and the desktop name), for a proxy
// to hand on. A server that takes no more clients closes here.
func ClientInitRaw(c io.ReadWriter) ([]byte, error) {
	if _, err := c.Write([]byte{1}); err != nil { // shared
		return nil, err
	}
	h := make([]byte, 24)
	if _, err := io.ReadFull(c, h); err != nil {
		return nil, fmt.Errorf("rfb server init: %w", err)
	}
	n := binary.BigEndian.Uint32(h[20:24])
	if n > maxDesktopName {
		return nil, fmt.Errorf("%w: a desktop name of %d bytes", ErrNotRFB, n)
	}
	name := make([]byte, n)
	if _, err := io.ReadFull(c, name); err != nil {
		return nil, fmt.Errorf("rfb server init: %w", err)
	}
	return append(h, name...), nil
}

// ErrUnexpected is wrapped when a server sends what a raw frame request
// does not expect.
var ErrUnexpected = errors.New("unexpected RFB message")

// Frame asks for the whole screen in raw encoding and returns its pixels
// (BitsPerPixel/8 bytes each, row by row).
func Frame(c io.ReadWriter, si ServerInit) ([]byte, error) {
	// SetEncodings: raw only.
	if _, err := c.Write([]byte{2, 0, 0, 1, 0, 0, 0, 0}); err != nil {
		return nil, err
	}
	req := []byte{3, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	binary.BigEndian.PutUint16(req[6:8], uint16(si.Width))
	binary.BigEndian.PutUint16(req[8:10], uint16(si.Height))
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	bpp := si.BitsPerPixel / 8
	screen := make([]byte, si.Width*si.Height*bpp)
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return nil, fmt.Errorf("rfb frame: %w", err)
	}
	if h[0] != 0 {
		return nil, fmt.Errorf("%w: type %d", ErrUnexpected, h[0])
	}
	for range binary.BigEndian.Uint16(h[2:4]) {
		var r [12]byte
		if _, err := io.ReadFull(c, r[:]); err != nil {
			return nil, fmt.Errorf("rfb rectangle: %w", err)
		}
		x, y := int(binary.BigEndian.Uint16(r[0:2])), int(binary.BigEndian.Uint16(r[2:4]))
		w, hgt := int(binary.BigEndian.Uint16(r[4:6])), int(binary.BigEndian.Uint16(r[6:8]))
		if enc := int32(binary.BigEndian.Uint32(r[8:12])); enc != 0 || x+w > si.Width || y+hgt > si.Height {
			return nil, fmt.Errorf("%w: rectangle %dx%d at %d,%d in encoding %d", ErrUnexpected, w, hgt, x, y, enc)
		}
		row := make([]byte, w*bpp)
		for line := range hgt {
			if _, err := io.ReadFull(c, row); err != nil {
				return nil, fmt.Errorf("rfb pixels: %w", err)
			}
			copy(screen[((y+line)*si.Width+x)*bpp:], row)
		}
	}
	return screen, nil
}

// Keysyms of the keys Type presses besides printable ASCII.
const (
	KeyReturn = 0xff0d
)

// Type presses and releases a key for each character of text ("\n" is
// Return).
func Type(c io.Writer, text string) error {
	for _, r := range text {
		sym := uint32(r)
		if r == '\n' {
			sym = KeyReturn
		}
		for _, down := range []byte{1, 0} {
			ev := []byte{4, down, 0, 0, 0, 0, 0, 0}
			binary.BigEndian.PutUint32(ev[4:], sym)
			if _, err := c.Write(ev); err != nil {
				return err
			}
		}
	}
	return nil
}
