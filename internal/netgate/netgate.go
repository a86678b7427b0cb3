package netgate

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Gate decides whether traffic to or from a remote address may pass.
type Gate interface {
	Allowed(addr string) bool
}

// ErrClosed is returned for traffic a Gate refuses.
var ErrClosed = errors.New("connection refused by gate")

// Check returns nil when g (nil: no gate) lets traffic to addr through,
// and an error wrapping ErrClosed when it does not.
func Check(g Gate, addr string) error {
	if g == nil || g.Allowed(addr) {
		return nil
	}
	return fmt.Errorf("dial %s: %w", addr, ErrClosed)
}

// DialContext returns a dial function (for http.Transport) that asks g
// before d dials.
func DialContext(g Gate, d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if err := Check(g, addr); err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, addr)
	}
}

// Wrap returns c, whose reads and writes fail with ErrClosed (closing c)
// once g stops letting traffic to addr through: a long-lived connection
// is cut as a network cut would. A nil g returns c itself.
func Wrap(g Gate, addr string, c net.Conn) net.Conn {
	if g == nil {
		return c
	}
	return &conn{Conn: c, addr: addr, gate: g}
}

type conn struct {
	net.Conn
	addr string
	gate Gate
}

func (c *conn) Read(p []byte) (int, error) {
	if !c.gate.Allowed(c.addr) {
		_ = c.Conn.Close()
		return 0, ErrClosed
	}
	return c.Conn.Read(p)
}

func (c *conn) Write(p []byte) (int, error) {
	if !c.gate.Allowed(c.addr) {
		_ = c.Conn.Close()
		return 0, ErrClosed
	}
	return c.Conn.Write(p)
}
