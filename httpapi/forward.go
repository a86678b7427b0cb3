package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"strconv"

	"github.com/svc-project/svc/internal/hopbatch"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
)

// Target says where a route's request runs.
type Target int

// Targets.
const (
	// Here runs a request on the peer that receives it (reads from its
	// replica, uploads to its disk).
	Here Target = iota
	// Leader runs it on the leader: a follower forwards it.
	Leader
	// VMHost runs it on the peer that hosts the path's VM (work on its disk
	// or screen): any other peer forwards it.
	VMHost
	// NodePeer runs it on the peer of the path's node (:name): work on
	// that host's files. Any other peer forwards it.
	NodePeer
)

func (t Target) String() string { return [...]string{"here", "leader", "vm-host", "node-peer"}[t] }

// forwarder sends a request that must run on another peer there, over
// kept-alive connections, and streams the answer back unchanged. A request
// is forwarded at most once.
type forwarder struct {
	s       *Server
	tr      http.RoundTripper
	proxy   *httputil.ReverseProxy
	batch   *hopbatch.Sender
	pending *pendingWrites
}

type ctxKey int

const targetAddrKey ctxKey = 0

func newForwarder(s *Server) *forwarder {
	f := &forwarder{s: s, pending: newPendingWrites()}
	// Over the fabric: the other peer knows this one by its certificate.
	// Long calls (deploys) set their own deadline.
	tr := s.links.PeerTransport()
	f.tr = tr
	f.proxy = &httputil.ReverseProxy{
		Transport: &leaderRetry{f: f, next: tr},
		Rewrite: func(pr *httputil.ProxyRequest) {
			addr, _ := pr.In.Context().Value(targetAddrKey).(string)
			f.rewrite(pr, addr)
		},
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Del(api.HeaderNotLeader) // between peers only
			if idx, err := strconv.ParseUint(resp.Header.Get(api.HeaderIndex), 10, 64); err == nil {
				f.pending.note(resp.Request.Header.Get("Authorization"), idx, s.replica.FSM())
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			addr, _ := r.Context().Value(targetAddrKey).(string)
			if errors.Is(err, context.Canceled) {
				return
			}
			s.metrics.forwardErrors.Inc()
			writeError(w, s.log, unavailable("1", "the peer at %s did not answer: %v", addr, err))
		},
	}
	f.batch = newBatchSender(f)
	return f
}

// rewrite addresses a forwarded request to the peer at addr, in this peer's
// name, with the client's address in X-Forwarded-For.
func (f *forwarder) rewrite(pr *httputil.ProxyRequest, addr string) {
	pr.Out.URL.Scheme = f.s.links.PeerScheme()
	pr.Out.URL.Host = addr
	pr.Out.Host = addr
	pr.Out.Header.Set(api.HeaderForwardedBy, f.s.replica.Name())
	pr.SetXForwarded()
}

func (f *forwarder) close() {
	if c, ok := f.tr.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// forwarded reports whether another peer forwarded r here (a peer proved it:
// see dropUnprovenForwarding).
func forwarded(r *http.Request) string { return r.Header.Get(api.HeaderForwardedBy) }

// forward sends r to the peer at addr and writes its answer.
func (f *forwarder) forward(w http.ResponseWriter, r *http.Request, addr string) {
	f.s.metrics.forwarded.Inc()
	f.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), targetAddrKey, addr)))
}

// How a request goes to the leader.
type leaderHop int

const (
	// hopReplay reads the (JSON) body whole first, so that a request a
	// former leader refused is sent again to the new one.
	hopReplay leaderHop = iota
	// hopBatch is hopReplay in the next batch of writes to the leader.
	hopBatch
	// hopStream streams the body as it comes (an upload of any size the
	// leader's disk takes), sent once: a leader change fails it (503).
	hopStream
)

// toLeader forwards r to the leader and returns true when this peer is not
// the leader (the answer has then been written). It waits a bounded time for
// a leader to be known, and never forwards a request that was forwarded once.
func (f *forwarder) toLeader(w http.ResponseWriter, r *http.Request, how leaderHop) bool {
	s := f.s
	if s.raft.IsLeader() {
		return false
	}
	if by := forwarded(r); by != "" {
		w.Header().Set(api.HeaderNotLeader, "1")
		writeError(w, s.log, unavailable("1", "peer %s forwarded this request here, but %s is no longer the leader; retry", by, s.replica.Name()))
		return true
	}
	if how != hopStream {
		if err := replayable(w, r); err != nil {
			writeError(w, s.log, err)
			return true
		}
	}
	name, addr, err := s.raft.WaitLeader(r.Context())
	if err != nil {
		writeError(w, s.log, unavailable("2", "%v", err))
		return true
	}
	if name == s.replica.Name() {
		return false // became leader while waiting
	}
	if how == hopBatch {
		f.forwardBatched(w, r, addr)
		return true
	}
	f.forward(w, r, addr)
	return true
}

// toVMHost forwards r to the peer that hosts the path's VM and returns true
// (having written the answer or an error), or returns false when this peer
// hosts it (or the VM is unknown: the handler answers 404).
func (f *forwarder) toVMHost(w http.ResponseWriter, r *http.Request, p httprouter.Params) bool {
	vm, ok := f.s.replica.FSM().VM(p.ByName("namespace"), p.ByName("vm"))
	if !ok {
		return false
	}
	return f.toPeer(w, r, vm.Node, fmt.Sprintf("vm %q is", vm.Name))
}

// toNodePeer forwards r to the peer of the path's node, as toVMHost.
func (f *forwarder) toNodePeer(w http.ResponseWriter, r *http.Request, p httprouter.Params) bool {
	name := p.ByName("name")
	if _, ok := f.s.replica.FSM().Node(name); !ok {
		return false
	}
	return f.toPeer(w, r, name, fmt.Sprintf("node %q is", name))
}

// toPeer forwards r to peer node unless it is this peer (false); what says
// what is there, for errors.
func (f *forwarder) toPeer(w http.ResponseWriter, r *http.Request, node, what string) bool {
	s := f.s
	if node == s.replica.Name() {
		return false
	}
	if by := forwarded(r); by != "" {
		writeError(w, s.log, unavailable("1", "peer %s forwarded this request here, but %s on %s; retry", by, what, node))
		return true
	}
	if ready, _ := s.replica.FSM().NodeReady(node); !ready {
		writeError(w, s.log, unavailable("5", "%s on peer %s, which is NOT READY", what, node))
		return true
	}
	addr := s.links.PeerAddr(node)
	if addr == "" {
		writeError(w, s.log, unavailable("2", "%s on peer %s, whose address is not known here yet", what, node))
		return true
	}
	if err := replayable(w, r); err != nil {
		writeError(w, s.log, err)
		return true
	}
	f.forward(w, r, addr)
	return true
}
