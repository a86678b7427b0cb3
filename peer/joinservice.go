package peer

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/svc-project/svc/node/fabric"
)

// serveJoins answers the join service on the gossip port's TLS streams.
func (p *Peer) serveJoins() {
	log := p.cfg.Log.With("part", "join")
	srv := &http.Server{
		Handler:           http.MaxBytesHandler(fabric.JoinHandler(p.member, log), 64<<10),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second,
		// A host whose token names another cluster ends the handshake (it
		// checks the CA first): the log says so.
		ErrorLog: slog.NewLogLogger(log.With("hint", "a failed handshake is a host with another cluster's token, or not a join").Handler(), slog.LevelWarn),
	}
	l := tls.NewListener(p.joinL, p.id.JoinServerConfig())
	p.wg.Go(func() {
		<-p.ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	p.wg.Go(func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			p.cfg.Log.Error("join service stopped", "err", err)
		}
	})
}

// maxJoinConns bounds the join service's open connections.
const maxJoinConns = 64

// connListener is a net.Listener fed with connections by put (the gossip
// port's TLS streams).
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, conns: make(chan net.Conn), slots: make(chan struct{}, maxJoinConns), done: make(chan struct{})}
}

func (l *connListener) put(c net.Conn) {
	select {
	case l.slots <- struct{}{}:
	default:
		_ = c.Close() // too many at once
		return
	}
	sc := &slotConn{Conn: c, release: func() { <-l.slots }}
	select {
	case l.conns <- sc:
	case <-l.done:
		_ = sc.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
