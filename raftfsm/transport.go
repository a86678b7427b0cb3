package raftfsm

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// Gate decides whether this peer may talk to a remote address. Production
// peers have none; the test cluster uses one to cut peers off from each other.
type Gate interface {
	Allowed(addr string) bool
}

// ErrGateClosed is returned for traffic the Gate refuses.
var ErrGateClosed = errors.New("connection refused by gate")

// streamLayer is a TCP raft.StreamLayer that advertises a fixed address and
// consults an optional Gate on every dial, read and write.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	gate      Gate
}

func newStreamLayer(bind, advertise string, gate Gate) (*streamLayer, error) {
	l, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft listen %s: %w", bind, err)
	}
	adv := l.Addr()
	if advertise != "" {
		host, _, err := net.SplitHostPort(advertise)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("raft advertise address %q: %w", advertise, err)
		}
		// Keep the port we really got when the configured one was 0.
		_, port, _ := net.SplitHostPort(l.Addr().String())
		a, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(host, port))
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("raft advertise address %q: %w", advertise, err)
		}
		adv = a
	}
	return &streamLayer{Listener: l, advertise: adv, gate: gate}, nil
}

func (s *streamLayer) Addr() net.Addr { return s.advertise }

func (s *streamLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	a := string(addr)
	if s.gate != nil && !s.gate.Allowed(a) {
		return nil, fmt.Errorf("dial %s: %w", a, ErrGateClosed)
	}
	c, err := net.DialTimeout("tcp", a, timeout)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", a, err)
	}
	if s.gate == nil {
		return c, nil
	}
	return &gatedConn{Conn: c, addr: a, gate: s.gate}, nil
}

// gatedConn fails reads and writes once its Gate closes, which makes raft
// drop pooled connections to a peer that was cut off.
type gatedConn struct {
	net.Conn
	addr string
	gate Gate
}

func (c *gatedConn) Read(p []byte) (int, error) {
	if !c.gate.Allowed(c.addr) {
		_ = c.Conn.Close()
		return 0, ErrGateClosed
	}
	return c.Conn.Read(p)
}

func (c *gatedConn) Write(p []byte) (int, error) {
	if !c.gate.Allowed(c.addr) {
		_ = c.Conn.Close()
		return 0, ErrGateClosed
	}
	return c.Conn.Write(p)
}
