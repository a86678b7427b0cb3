package raftstore

import (
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/internal/netgate"
)

// streamLayer is a TCP raft.StreamLayer that advertises a fixed address and
// consults an optional Gate on every dial, read and write.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	gate      netgate.Gate
}

func newStreamLayer(bind, advertise string, gate netgate.Gate) (*streamLayer, error) {
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
	if err := netgate.Check(s.gate, a); err != nil {
		return nil, err
	}
	c, err := net.DialTimeout("tcp", a, timeout)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", a, err)
	}
	// A pooled connection to a peer cut off later fails, so raft drops it.
	return netgate.Wrap(s.gate, a, c), nil
}
