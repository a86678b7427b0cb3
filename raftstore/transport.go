package raftstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/internal/netgate"
)

// PeerTLS is how the Raft transport authenticates the other peers: every
// connection, in and out, is TLS with a certificate checked on both ends.
type PeerTLS struct {
	// Server accepts connections (it must require and check the client's
	// certificate); Client dials them (it must check the server's).
	Server, Client *tls.Config
	// Check re-checks the other end of an established connection; Changed
	// is closed when what Check accepts may have changed (a peer removed),
	// and then every connection Check refuses is closed.
	Check   func(cs *tls.ConnectionState) error
	Changed func() <-chan struct{}
	// Refused, when set, hears of every handshake that failed (in or out):
	// a peer this one does not know may be one admitted while it was down.
	Refused func(err error)
}

// handshakeTimeout bounds a TLS handshake on the Raft port; maxHandshakes
// bounds the handshakes under way at once (more are dropped).
const (
	handshakeTimeout = 10 * time.Second
	maxHandshakes    = 64
)

// streamLayer is a raft.StreamLayer over TCP that advertises a fixed
// address, consults an optional Gate on every dial, read and write, and
// with PeerTLS carries every byte in mutually authenticated TLS.
type streamLayer struct {
	l         net.Listener
	advertise net.Addr
	gate      netgate.Gate
	tls       *PeerTLS
	log       *slog.Logger

	accepted   chan net.Conn
	done       chan struct{}
	closeOnce  sync.Once
	handshakes chan struct{} // a slot per handshake under way

	mu    sync.Mutex
	conns map[*trackedConn]struct{}
	// lastRefusal limits the log of refused connections to one a second.
	lastRefusal time.Time
}

func newStreamLayer(l net.Listener, advertise string, gate netgate.Gate, pt *PeerTLS, log *slog.Logger) (*streamLayer, error) {
	adv := l.Addr()
	if advertise != "" {
		host, _, err := net.SplitHostPort(advertise)
		if err != nil {
			return nil, fmt.Errorf("raft advertise address %q: %w", advertise, err)
		}
		// Keep the port we really got when the configured one was 0.
		_, port, _ := net.SplitHostPort(l.Addr().String())
		a, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(host, port))
		if err != nil {
			return nil, fmt.Errorf("raft advertise address %q: %w", advertise, err)
		}
		adv = a
	}
	s := &streamLayer{l: l, advertise: adv, gate: gate, tls: pt, log: log,
		accepted: make(chan net.Conn), done: make(chan struct{}), handshakes: make(chan struct{}, maxHandshakes),
		conns: map[*trackedConn]struct{}{}}
	if pt != nil {
		go s.acceptLoop()
		go s.recheckLoop()
	}
	return s, nil
}

func (s *streamLayer) Addr() net.Addr { return s.advertise }

// Accept returns the next connection: with TLS, one whose handshake has
// completed and whose peer was accepted.
func (s *streamLayer) Accept() (net.Conn, error) {
	if s.tls == nil {
		return s.l.Accept()
	}
	select {
	case c := <-s.accepted:
		return c, nil
	case <-s.done:
		return nil, net.ErrClosed
	}
}

func (s *streamLayer) Close() error {
	err := s.l.Close()
	s.closeOnce.Do(func() { close(s.done) })
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Conn.Close()
	}
	s.mu.Unlock()
	return err
}

// acceptLoop accepts TCP connections and hands each, once its handshake
// succeeded, to Accept; a handshake that fails or takes too long closes the
// connection without a byte of Raft read from it.
func (s *streamLayer) acceptLoop() {
	for {
		raw, err := s.l.Accept()
		if err != nil {
			select {
			case <-s.done:
				return
			default:
			}
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors
			continue
		}
		select {
		case s.handshakes <- struct{}{}:
		default:
			_ = raw.Close() // too many handshakes at once
			continue
		}
		go func() {
			defer func() { <-s.handshakes }()
			c, err := s.handshake(tls.Server(raw, s.tls.Server), raw.RemoteAddr().String())
			if err != nil {
				return
			}
			select {
			case s.accepted <- c:
			case <-s.done:
				_ = c.Close()
			}
		}()
	}
}

func (s *streamLayer) handshake(tc *tls.Conn, remote string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = tc.Close()
		s.refused(remote, err)
		if s.tls.Refused != nil {
			s.tls.Refused(err)
		}
		return nil, fmt.Errorf("raft TLS handshake with %s: %w", remote, err)
	}
	return s.track(tc), nil
}

func (s *streamLayer) refused(remote string, err error) {
	s.mu.Lock()
	quiet := time.Since(s.lastRefusal) < time.Second
	if !quiet {
		s.lastRefusal = time.Now()
	}
	s.mu.Unlock()
	if !quiet {
		s.log.Warn("refused a Raft connection", "remote", remote, "err", err)
	}
}

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
	c = netgate.Wrap(s.gate, a, c)
	if s.tls == nil {
		return c, nil
	}
	return s.handshake(tls.Client(c, s.tls.Client), a)
}

// trackedConn is a TLS connection the layer closes if its peer is removed.
type trackedConn struct {
	*tls.Conn
	s    *streamLayer
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.s.mu.Lock()
		delete(c.s.conns, c)
		c.s.mu.Unlock()
	})
	return c.Conn.Close()
}

func (s *streamLayer) track(tc *tls.Conn) net.Conn {
	c := &trackedConn{Conn: tc, s: s}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return c
}

// recheckLoop closes the connections of peers no longer trusted, at every
// change of who is.
func (s *streamLayer) recheckLoop() {
	for {
		select {
		case <-s.done:
			return
		case <-s.tls.Changed():
		}
		s.mu.Lock()
		var stale []*trackedConn
		for c := range s.conns {
			cs := c.ConnectionState()
			if err := s.tls.Check(&cs); err != nil {
				stale = append(stale, c)
			}
		}
		s.mu.Unlock()
		for _, c := range stale {
			s.log.Warn("closed the Raft connection of a peer no longer trusted", "remote", c.RemoteAddr().String())
			_ = c.Close()
		}
	}
}
