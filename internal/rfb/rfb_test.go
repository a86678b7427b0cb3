package rfb

import (
	"bytes"
	"crypto/des"
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"net"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/guest"
)

// server is a minimal RFB server offering types and checking password.
func server(t *testing.T, types []byte, password string) string {
	t.Helper()
	return guest.Serve(t, "127.0.0.1:0", func(c net.Conn) {
		_, _ = c.Write([]byte("RFB 003.008\n"))
		ver := make([]byte, 12)
		if _, err := io.ReadFull(c, ver); err != nil {
			return
		}
		_, _ = c.Write(append([]byte{byte(len(types))}, types...))
		var choice [1]byte
		if _, err := io.ReadFull(c, choice[:]); err != nil || choice[0] != SecurityVNCAuth {
			return
		}
		challenge := []byte("0123456789abcdef")
		_, _ = c.Write(challenge)
		got := make([]byte, 16)
		if _, err := io.ReadFull(c, got); err != nil {
			return
		}
		key := make([]byte, 8)
		copy(key, password)
		for i := range key {
			key[i] = bits.Reverse8(key[i])
		}
		block, _ := des.NewCipher(key)
		want := make([]byte, 16)
		block.Encrypt(want[:8], challenge[:8])
		block.Encrypt(want[8:], challenge[8:])
		var res [4]byte
		if !bytes.Equal(got, want) {
			binary.BigEndian.PutUint32(res[:], 1)
		}
		_, _ = c.Write(res[:])
	}).String()
}

func TestAuthenticate_cases(t *testing.T) {
	cases := []struct {
		name     string
		types    []byte
		password string
		wantErr  error
	}{
		{name: "right password", types: []byte{SecurityVNCAuth}, password: "s3cret"},
		{name: "wrong password", types: []byte{SecurityVNCAuth}, password: "guess", wantErr: ErrAuthFailed},
		{name: "no VNC authentication offered", types: []byte{SecurityNone}, password: "s3cret", wantErr: ErrAuthFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := server(t, c.types, "s3cret")
			_, err := Authenticate(addr, c.password, 5*time.Second)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("err = %v, want %v", err, c.wantErr)
			}
		})
	}
}

// ServeNone's opening is one a client completes with no password; a
// client of another version is refused.
func TestServeNone_cases(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	errc := make(chan error, 1)
	go func() { errc <- ServeNone(a) }()
	types, err := Login(b, "")
	if err != nil || !bytes.Equal(types, []byte{SecurityNone}) {
		t.Fatalf("login: %v %v", types, err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}

	c, d := net.Pipe()
	defer c.Close()
	defer d.Close()
	go func() { errc <- ServeNone(c) }()
	greeting := make([]byte, 12)
	_, _ = io.ReadFull(d, greeting)
	_, _ = d.Write([]byte("RFB 003.003\n"))
	if err := <-errc; !errors.Is(err, ErrNotRFB) {
		t.Fatalf("an RFB 3.3 client: %v", err)
	}
}
