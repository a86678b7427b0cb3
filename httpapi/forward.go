package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"time"

	"github.com/svc-project/svc/api"
)

// forwarder sends requests that must run on the leader there, over kept-alive
// connections, and streams the answer back unchanged.
type forwarder struct {
	s     *Server
	tr    *http.Transport
	proxy *httputil.ReverseProxy
}

type ctxKey int

const leaderAddrKey ctxKey = 0

func newForwarder(s *Server) *forwarder {
	f := &forwarder{s: s}
	dialer := &net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}
	f.tr = &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if g := s.cfg.Gate; g != nil && !g.Allowed(addr) {
				return nil, fmt.Errorf("dial %s: refused by gate", addr)
			}
			return dialer.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // long calls (deploys) set their own deadline
	}
	f.proxy = &httputil.ReverseProxy{
		Transport: f.tr,
		Rewrite: func(pr *httputil.ProxyRequest) {
			addr, _ := pr.In.Context().Value(leaderAddrKey).(string)
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = addr
			pr.Out.Host = addr
			pr.Out.Header.Set(api.HeaderForwardedBy, s.b.Name())
			if tok, err := s.b.PeerToken(); err == nil {
				pr.Out.Header.Set(api.HeaderPeerToken, tok)
			}
			pr.SetXForwarded()
		},
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			f.awaitIndex(resp.Request.Context(), resp.Header.Get(api.HeaderIndex))
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			addr, _ := r.Context().Value(leaderAddrKey).(string)
			if errors.Is(err, context.Canceled) {
				return
			}
			s.metrics.forwardErrors.Inc()
			writeError(w, s.log, unavailable("1", "the leader at %s did not answer: %v", addr, err))
		},
	}
	return f
}

func (f *forwarder) close() { f.tr.CloseIdleConnections() }

// readYourWrites bounds the wait for the local replica to catch up with a
// forwarded write.
const readYourWrites = 5 * time.Second

// awaitIndex waits until the local replica has applied the leader's index
// (a header value), so that the caller's next read here sees its write.
func (f *forwarder) awaitIndex(ctx context.Context, header string) {
	want, err := strconv.ParseUint(header, 10, 64)
	if err != nil {
		return
	}
	fsm := f.s.b.FSM()
	deadline := time.NewTimer(readYourWrites)
	defer deadline.Stop()
	for {
		changed := fsm.Changed()
		if fsm.Index() >= want {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			f.s.log.Warn("replica did not catch up with a forwarded write", "want", want, "have", fsm.Index())
			return
		case <-ctx.Done():
			return
		}
	}
}

// toLeader forwards r to the leader and returns true when this peer is not
// the leader (the answer has then been written). It waits a bounded time for
// a leader to be known, and never forwards a request that was forwarded once.
func (f *forwarder) toLeader(w http.ResponseWriter, r *http.Request) bool {
	s := f.s
	if s.b.IsLeader() {
		return false
	}
	if by := r.Header.Get(api.HeaderForwardedBy); by != "" {
		writeError(w, s.log, unavailable("1", "peer %s forwarded this request here, but %s is no longer the leader; retry", by, s.b.Name()))
		return true
	}
	name, addr, err := f.waitLeader(r.Context())
	if err != nil {
		writeError(w, s.log, err)
		return true
	}
	if name == s.b.Name() {
		return false // became leader while waiting
	}
	s.metrics.forwarded.Inc()
	f.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), leaderAddrKey, addr)))
	return true
}

// waitLeader polls for a known leader with an API address, up to LeaderWait.
func (f *forwarder) waitLeader(ctx context.Context) (string, string, error) {
	s := f.s
	deadline := time.Now().Add(s.cfg.LeaderWait)
	for {
		if s.b.IsLeader() {
			return s.b.Name(), "", nil
		}
		if name, addr := s.b.LeaderAPI(); name != "" && addr != "" {
			return name, addr, nil
		}
		if time.Now().After(deadline) {
			return "", "", unavailable("2", "no leader: peer %s cannot reach a quorum of the cluster (waited %s); writes are refused until a leader is elected", s.b.Name(), s.cfg.LeaderWait)
		}
		select {
		case <-ctx.Done():
			return "", "", errorf(http.StatusServiceUnavailable, api.ReasonServiceUnavailable, "gave up waiting for a leader: %v", ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}
