package rfb

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"io"
)

// ServeVNCAuth plays the server's side of the opening to a client that
// must know password: RFB 3.8 (or 3.7) offering VNC authentication only,
// so a client asking for no security is refused. It returns nil, with the
// connection where the client sends its ClientInit, once the client has
// answered the challenge right; ErrAuthFailed when it has not (it has
// been told so).
func ServeVNCAuth(c io.ReadWriter, password string) error {
	if _, err := c.Write([]byte("RFB 003.008\n")); err != nil {
		return err
	}
	ver := make([]byte, 12)
	if _, err := io.ReadFull(c, ver); err != nil {
		return fmt.Errorf("rfb client version: %w", err)
	}
	v38 := string(ver) == "RFB 003.008\n"
	if !v38 && string(ver) != "RFB 003.007\n" {
		return fmt.Errorf("%w: the client speaks %q, not RFB 3.7 or 3.8", ErrNotRFB, ver)
	}
	if _, err := c.Write([]byte{1, SecurityVNCAuth}); err != nil {
		return err
	}
	var choice [1]byte
	if _, err := io.ReadFull(c, choice[:]); err != nil {
		return fmt.Errorf("rfb security choice: %w", err)
	}
	if choice[0] != SecurityVNCAuth {
		_ = fail(c, v38, "VNC authentication is required")
		return fmt.Errorf("%w: the client chose security type %d", ErrAuthFailed, choice[0])
	}
	challenge := make([]byte, 16)
	if _, err := rand.Read(challenge); err != nil {
		return err
	}
	if _, err := c.Write(challenge); err != nil {
		return err
	}
	answer := make([]byte, 16)
	if _, err := io.ReadFull(c, answer); err != nil {
		return fmt.Errorf("rfb challenge answer: %w", err)
	}
	if subtle.ConstantTimeCompare(answer, Response(challenge, password)) != 1 {
		_ = fail(c, v38, "wrong password")
		return ErrAuthFailed
	}
	_, err := c.Write([]byte{0, 0, 0, 0}) // SecurityResult: OK
	return err
}

// fail sends a failed SecurityResult (with its reason from RFB 3.8 on).
func fail(c io.Writer, reason bool, why string) error {
	b := []byte{0, 0, 0, 1}
	if reason {
		b = binary.BigEndian.AppendUint32(b, uint32(len(why)))
		b = append(b, why...)
	}
	_, err := c.Write(b)
	return err
}
