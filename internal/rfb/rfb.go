package rfb

import (
	"crypto/des"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"slices"
	"strings"
	"time"
)

// Security types of RFB 3.8.
const (
	SecurityNone    = 1
	SecurityVNCAuth = 2
)

// Errors of a handshake.
var (
	ErrNotRFB     = errors.New("not an RFB server")
	ErrAuthFailed = errors.New("VNC authentication failed")
)

// Offer reads a server's greeting and the security types it offers, leaving
// the connection where the client chooses one.
func Offer(c net.Conn) ([]byte, error) {
	ver := make([]byte, 12)
	if _, err := io.ReadFull(c, ver); err != nil {
		return nil, fmt.Errorf("rfb version: %w", err)
	}
	if !strings.HasPrefix(string(ver), "RFB 003.") {
		return nil, fmt.Errorf("%w: greeting %q", ErrNotRFB, ver)
	}
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		return nil, fmt.Errorf("rfb version: %w", err)
	}
	var n [1]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, fmt.Errorf("rfb security types: %w", err)
	}
	if n[0] == 0 {
		return nil, fmt.Errorf("%w: the server refused the connection", ErrNotRFB)
	}
	types := make([]byte, n[0])
	if _, err := io.ReadFull(c, types); err != nil {
		return nil, fmt.Errorf("rfb security types: %w", err)
	}
	return types, nil
}

// Authenticate dials addr and logs in with VNC authentication and password.
// It returns the security types the server offered; ErrAuthFailed means the
// server refused the password.
func Authenticate(addr, password string, timeout time.Duration) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	return login(c, password, false)
}

// Login logs in on a connection to an RFB server: VNC authentication with
// password when the server offers it, else no security if it offers that.
// It returns the security types offered; the connection is then where the
// client sends its ClientInit.
func Login(c net.Conn, password string) ([]byte, error) { return login(c, password, true) }

func login(c net.Conn, password string, allowNone bool) ([]byte, error) {
	types, err := Offer(c)
	if err != nil {
		return nil, err
	}
	if allowNone && !slices.Contains(types, SecurityVNCAuth) && slices.Contains(types, SecurityNone) {
		if _, err := c.Write([]byte{SecurityNone}); err != nil {
			return types, err
		}
		return types, securityResult(c)
	}
	if !slices.Contains(types, SecurityVNCAuth) {
		return types, fmt.Errorf("%w: VNC authentication not offered (%v)", ErrAuthFailed, types)
	}
	if _, err := c.Write([]byte{SecurityVNCAuth}); err != nil {
		return types, err
	}
	challenge := make([]byte, 16)
	if _, err := io.ReadFull(c, challenge); err != nil {
		return types, fmt.Errorf("rfb challenge: %w", err)
	}
	if _, err := c.Write(Response(challenge, password)); err != nil {
		return types, err
	}
	return types, securityResult(c)
}

func securityResult(c io.Reader) error {
	var result [4]byte
	if _, err := io.ReadFull(c, result[:]); err != nil {
		return fmt.Errorf("rfb security result: %w", err)
	}
	if binary.BigEndian.Uint32(result[:]) != 0 {
		return ErrAuthFailed
	}
	return nil
}

// ServeNone plays the server's side of the opening to a client: RFB 3.8
// with no security (the caller has authorized the client by other means),
// leaving the connection where the client sends its ClientInit.
func ServeNone(c io.ReadWriter) error {
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		return err
	}
	ver := make([]byte, 12)
	if _, err := io.ReadFull(c, ver); err != nil {
		return fmt.Errorf("rfb client version: %w", err)
	}
	if string(ver) != "RFB 003.008\n" {
		return fmt.Errorf("%w: the client speaks %q, not RFB 3.8", ErrNotRFB, ver)
	}
	if _, err := c.Write([]byte{1, SecurityNone}); err != nil {
		return err
	}
	var choice [1]byte
	if _, err := io.ReadFull(c, choice[:]); err != nil {
		return fmt.Errorf("rfb security choice: %w", err)
	}
	if choice[0] != SecurityNone {
		return fmt.Errorf("%w: the client chose security type %d", ErrNotRFB, choice[0])
	}
	_, err := c.Write([]byte{0, 0, 0, 0}) // SecurityResult: OK
	return err
}

// ServeInit ends the opening ServeNone began: it reads the client's
// ClientInit (its shared flag is moot: a proxy always shares) and sends
// serverInit, a ServerInit as ClientInitRaw returned it.
func ServeInit(c io.ReadWriter, serverInit []byte) error {
	var shared [1]byte
	if _, err := io.ReadFull(c, shared[:]); err != nil {
		return fmt.Errorf("rfb client init: %w", err)
	}
	_, err := c.Write(serverInit)
	return err
}

// Response is the answer to a VNC authentication challenge: the challenge
// encrypted with DES under the password (its first 8 bytes, zero-padded, each
// byte's bits reversed, as VNC does).
func Response(challenge []byte, password string) []byte {
	key := make([]byte, 8)
	copy(key, password)
	for i := range key {
		key[i] = bits.Reverse8(key[i])
	}
	block, _ := des.NewCipher(key) // the key is always 8 bytes
	out := make([]byte, len(challenge))
	for i := 0; i+8 <= len(challenge); i += 8 {
		block.Encrypt(out[i:i+8], challenge[i:i+8])
	}
	return out
}
