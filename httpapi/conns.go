package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/svc-project/svc/api"
)

// Limits reclaim what idle, slow or greedy clients hold: every connection
// and every body read has a deadline, and connections are counted.
type Limits struct {
	// IdleTimeout closes a keep-alive connection with no request for this
	// long (default 90 s).
	IdleTimeout time.Duration
	// HeaderTimeout bounds reading a request's headers (default 10 s).
	HeaderTimeout time.Duration
	// BodyTimeout bounds reading a whole JSON body (default 30 s).
	BodyTimeout time.Duration
	// UploadIdleTimeout bounds the pause between two reads of an upload's
	// body: uploads are timed by progress, not by wall time (default 60 s).
	UploadIdleTimeout time.Duration
	// MaxConns bounds the open connections of clients that are not peers
	// (default: three quarters of the file limit, at most 16384). Peers of
	// the cluster are always let in; admins on the host use the admin socket.
	MaxConns int
	// MaxConnsPerClient bounds one client address's connections (default 512).
	MaxConnsPerClient int
}

func (l *Limits) setDefaults() {
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 90 * time.Second
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = 10 * time.Second
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = 30 * time.Second
	}
	if l.UploadIdleTimeout <= 0 {
		l.UploadIdleTimeout = 60 * time.Second
	}
	if l.MaxConns <= 0 {
		l.MaxConns = defaultMaxConns()
	}
	if l.MaxConnsPerClient <= 0 {
		l.MaxConnsPerClient = 512
	}
}

// defaultMaxConns leaves a quarter of the process's file limit to peers,
// Raft, gossip and files.
func defaultMaxConns() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 1024
	}
	return int(min(rl.Cur*3/4, 16384))
}

// connLimiter counts open connections, in all and per client address.
type connLimiter struct {
	limits Limits
	// peer reports whether an address is a peer of the cluster's.
	peer func(ip string) bool

	mu     sync.Mutex
	total  int
	client map[string]int
}

func newConnLimiter(l Limits, peer func(string) bool) *connLimiter {
	return &connLimiter{limits: l, peer: peer, client: map[string]int{}}
}

// acquire counts a new connection from ip; it refuses one over a limit
// unless ip is a peer's.
func (c *connLimiter) acquire(ip string) bool {
	exempt := c.peer != nil && c.peer(ip)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !exempt && (c.total >= c.limits.MaxConns || c.client[ip] >= c.limits.MaxConnsPerClient) {
		return false
	}
	c.total++
	c.client[ip]++
	return true
}

func (c *connLimiter) release(ip string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total--
	if c.client[ip]--; c.client[ip] <= 0 {
		delete(c.client, ip)
	}
}

// open returns how many connections are counted.
func (c *connLimiter) open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// limitListener accepts connections within the limiter's bounds. One over
// them is answered 503 (on a plain listener) and closed at once, so the
// accept loop never stalls and a refused client learns why.
type limitListener struct {
	net.Listener
	lim     *connLimiter
	plain   bool
	refused func()
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		if l.lim.acquire(ip) {
			return &countedConn{Conn: c, release: func() { l.lim.release(ip) }, statusErrors: l.plain}, nil
		}
		l.refused()
		go refuse(c, l.plain)
	}
}

// refuse answers a connection over the limits and closes it.
func refuse(c net.Conn, plain bool) {
	defer c.Close()
	if !plain {
		return
	}
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	body, _ := json.Marshal(api.NewStatus(http.StatusServiceUnavailable, api.ReasonServiceUnavailable, "too many connections to this peer; retry later"))
	_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+string(body))
}

// countedConn gives its count back once when closed. On a plain listener
// it also turns the errors net/http writes itself, before any handler, for
// a request it cannot read (431 for headers or a request line over
// MaxHeaderBytes, 400 for a malformed request) into the API's Status body,
// so that every refusal has the same shape.
type countedConn struct {
	net.Conn
	once         sync.Once
	release      func()
	statusErrors bool
}

// earlyError is what net/http writes for a request it cannot read. A
// handler's answer never looks like it: it has a Date header, and headers
// in sorted order (Connection before Content-Type).
var earlyError = regexp.MustCompile(`^HTTP/1\.1 ([45]\d\d) [^\r\n]*\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n([^\r\n]*)$`)

func (c *countedConn) Write(p []byte) (int, error) {
	m := earlyError.FindSubmatch(p)
	if !c.statusErrors || m == nil {
		return c.Conn.Write(p)
	}
	code, _ := strconv.Atoi(string(m[1]))
	reason, msg := api.ReasonBadRequest, string(m[2])
	switch {
	case code == http.StatusRequestHeaderFieldsTooLarge:
		msg = "the request line and headers are over 64 KiB"
	case code >= 500:
		reason = api.ReasonInternalError
	}
	body, _ := json.Marshal(api.NewStatus(code, reason, msg))
	resp := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
	if _, err := io.WriteString(c.Conn, resp); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// bodyMode says how a route's request body is timed.
type bodyMode int

const (
	// bodyWhole bounds the whole body by Limits.BodyTimeout.
	bodyWhole bodyMode = iota
	// bodyProgress bounds each pause by Limits.UploadIdleTimeout.
	bodyProgress
)

// deadlineBody keeps a read deadline on the connection from the moment the
// headers are read until the body has been read to its end: a whole-body
// deadline for JSON, or one that moves with every read for uploads. It is
// cleared only at the end of the body: left behind, it would cancel a long
// handler (a deploy) through the server's background read; cleared early, the
// server's drain of an unread body before its answer would wait on a slow
// client without a bound.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	mode   bodyMode
	limits Limits
	ended  bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.ended {
		return b.ReadCloser.Read(p)
	}
	if b.mode == bodyProgress {
		_ = b.rc.SetReadDeadline(time.Now().Add(b.limits.UploadIdleTimeout))
	}
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.ended = true
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, errBodyTimeout
	}
	return n, err
}

// errBodyTimeout is a body that did not arrive in time (answered 408).
// It is an os.ErrDeadlineExceeded, so that a handler of another package
// (the Kubernetes door) tells it apart.
var errBodyTimeout = fmt.Errorf("the request body did not arrive in time: %w", os.ErrDeadlineExceeded)

// withBodyDeadline times r's body, if it has one.
func (s *Server) withBodyDeadline(w http.ResponseWriter, r *http.Request, mode bodyMode) {
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	// An answer may come before the body is read (a refusal; a forwarded
	// upload the old leader refused): net/http would then close the
	// connection under a body of over 256 KiB still being sent, and the
	// peer that forwarded it could lose the answer mid-way. drainBody
	// reads what is left after the answer instead.
	_ = rc.EnableFullDuplex() // HTTP/2 is full duplex always
	d := s.cfg.Limits.BodyTimeout
	if mode == bodyProgress {
		d = s.cfg.Limits.UploadIdleTimeout
	}
	_ = rc.SetReadDeadline(time.Now().Add(d))
	r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, mode: mode, limits: s.cfg.Limits}
}

// catchUpWait bounds how long a request waits for a peer that has just
// started to catch up before it is refused (503).
const catchUpWait = 5 * time.Second

// maxDrain bounds how much of a request body that was answered without
// being read (a refusal) is read and thrown away, so that a client that
// sends its whole body before it reads the answer (most HTTP libraries)
// gets the answer instead of a reset connection. Beyond it the connection
// is closed.
const maxDrain = 64 << 20

// drainBody flushes the answer and reads what is left of r's body, at most
// maxDrain, within the body's deadline. A client that asked to be told
// before it sends (Expect: 100-continue) is not made to send.
func drainBody(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.Header.Get("Expect") != "" {
		return
	}
	_ = http.NewResponseController(w).Flush()
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxDrain))
}
