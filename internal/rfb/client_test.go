package rfb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

// A 2x1 screen at 32 bits: ServerInit, a raw frame of two rectangles, keys.
func TestClient_init_frame_type(t *testing.T) {
	cl, srv := net.Pipe()
	defer cl.Close()
	defer srv.Close()
	keys := make(chan []byte, 1)
	go func() {
		var shared [1]byte
		_, _ = io.ReadFull(srv, shared[:])
		init := make([]byte, 24)
		binary.BigEndian.PutUint16(init[0:], 2)
		binary.BigEndian.PutUint16(init[2:], 1)
		init[4] = 32
		binary.BigEndian.PutUint32(init[20:], 4)
		_, _ = srv.Write(append(init, "test"...))
		req := make([]byte, 8+10)
		_, _ = io.ReadFull(srv, req)
		msg := []byte{0, 0, 0, 2}
		for x := range 2 {
			r := make([]byte, 12)
			binary.BigEndian.PutUint16(r[0:], uint16(x))
			binary.BigEndian.PutUint16(r[4:], 1)
			binary.BigEndian.PutUint16(r[6:], 1)
			msg = append(append(msg, r...), byte(x+1), 0, 0, 0)
		}
		_, _ = srv.Write(msg)
		k := make([]byte, 4*8)
		_, _ = io.ReadFull(srv, k)
		keys <- k
		bad := append([]byte{0, 0, 0, 1}, make([]byte, 12)...)
		_, _ = io.ReadFull(srv, req)
		binary.BigEndian.PutUint16(bad[8:], 9) // width 9: off the screen
		_, _ = srv.Write(bad)
	}()
	si, err := ClientInit(cl)
	if err != nil || si.Width != 2 || si.Height != 1 || si.BitsPerPixel != 32 || si.Name != "test" {
		t.Fatalf("init %+v %v", si, err)
	}
	px, err := Frame(cl, si)
	if err != nil || !bytes.Equal(px, []byte{1, 0, 0, 0, 2, 0, 0, 0}) {
		t.Fatalf("frame %v %v", px, err)
	}
	if err := Type(cl, "a\n"); err != nil {
		t.Fatal(err)
	}
	k := <-keys
	if k[0] != 4 || k[1] != 1 || binary.BigEndian.Uint32(k[4:8]) != 'a' || binary.BigEndian.Uint32(k[28:32]) != KeyReturn || k[25] != 0 {
		t.Fatalf("key events % x", k)
	}
	if _, err := Frame(cl, si); !errors.Is(err, ErrUnexpected) {
		t.Fatalf("a rectangle off the screen: %v", err)
	}
}
