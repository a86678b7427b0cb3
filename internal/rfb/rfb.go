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
	types, err := Offer(c)
	if err != nil {
		return nil, err
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
	var result [4]byte
	if _, err := io.ReadFull(c, result[:]); err != nil {
		return types, fmt.Errorf("rfb security result: %w", err)
	}
	if binary.BigEndian.Uint32(result[:]) != 0 {
		return types, ErrAuthFailed
	}
	return types, nil
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
