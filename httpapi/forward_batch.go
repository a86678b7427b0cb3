package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/internal/hopbatch"
)

// Writes a follower forwards to the leader at the same moment go in one
// request (hopbatch): one round trip, one set of TLS records and system
// calls, for as many writes as arrived while the previous batch was under
// way. The leader serves each write of a batch with its whole API, as if it
// had come alone from this peer: its own token is checked, its own answer
// comes back as soon as it is ready. A write refused unrun by a peer that
// no longer leads goes in a batch to the new leader, a bounded number of
// times, as leaderRetry sends the proxy's.

// forwardBatchPath is the leader's route for batches of forwarded writes.
const forwardBatchPath = "/api/v1/internal/forward"

// Batching: one batch to the leader under way at once (the others wait to
// go together in the next); a batch still waiting for a slow answer
// (a deploy) lets the next one go after forwardBatchHold.
const (
	forwardBatchesInFlight = 1
	forwardBatchHold       = 20 * time.Millisecond
)

// batchLimits bound a batch of forwarded writes: each body is one the
// proxy would forward (replayable), each answer at most 16 MiB.
func batchLimits() hopbatch.Limits {
	l := hopbatch.DefaultLimits()
	l.MaxBody = maxReplayBody
	return l
}

func newBatchSender(f *forwarder) *hopbatch.Sender {
	s := f.s
	return &hopbatch.Sender{
		Transport:   f.tr,
		URL:         func(addr string) string { return s.links.PeerScheme() + "://" + addr + forwardBatchPath },
		Limits:      batchLimits(),
		MaxInFlight: forwardBatchesInFlight,
		Hold:        forwardBatchHold,
		Sent:        func(n int) { s.metrics.batchSize.Observe(float64(n)) },
	}
}

// dropHopHeaders drops the headers of one hop (those Connection names and
// the hop-by-hop ones of RFC 9110), as httputil.ReverseProxy does on the
// way from the client to the leader and back.
func dropHopHeaders(h http.Header) {
	for _, f := range h["Connection"] {
		for _, name := range strings.Split(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range [...]string{
		"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade",
	} {
		h.Del(name)
	}
}

// forwardBatched sends the write r to the leader at addr in the next batch
// and writes its answer. r's body was read whole (replayable). A refusal by
// a peer that no longer leads is sent to the new leader (toNewLeader).
func (f *forwarder) forwardBatched(w http.ResponseWriter, r *http.Request, addr string) {
	s := f.s
	s.metrics.forwarded.Inc()
	resp, err := f.sendBatched(r, addr)
	resp, addr, err = f.toNewLeader(r.Context(), addr, resp, err, func(addr string) (*http.Response, error) {
		return f.sendBatched(r, addr)
	})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return // the client left
		}
		s.metrics.forwardErrors.Inc()
		writeError(w, s.log, unavailable("1", "the peer at %s did not answer: %v", addr, err))
		return
	}
	defer resp.Body.Close()
	resp.Header.Del(api.HeaderNotLeader) // between peers only
	if idx, err := strconv.ParseUint(resp.Header.Get(api.HeaderIndex), 10, 64); err == nil {
		f.pending.note(r.Header.Get("Authorization"), idx, s.replica.FSM())
	}
	dropHopHeaders(resp.Header)
	resp.Header.Del("Content-Length")
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	if resp.ContentLength >= 0 && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// sendBatched sends r, as the proxy would forward it to the peer at addr,
// in the next batch there.
func (f *forwarder) sendBatched(r *http.Request, addr string) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.Body, out.TransferEncoding = http.NoBody, nil
	if r.GetBody != nil {
		body, err := r.GetBody()
		if err != nil {
			return nil, fmt.Errorf("the request's body: %w", err)
		}
		out.Body = body
	}
	dropHopHeaders(out.Header)
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
		out.Header.Del(h)
	}
	f.rewrite(&httputil.ProxyRequest{In: r, Out: out}, addr)
	return f.batch.Do(r.Context(), addr, out)
}

// forwardBatch serves a batch of writes another peer forwarded: each runs
// through the whole API on its own, from that peer (on a cluster of plain
// peers, named as the batch names it).
func (s *Server) forwardBatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	full := s.Handler()
	from := r.Header.Get(api.HeaderPlainPeer)
	h := http.HandlerFunc(func(w http.ResponseWriter, item *http.Request) {
		if item.URL.Path == forwardBatchPath || forwarded(item) == "" {
			writeError(w, s.log, badRequest("a batch carries only writes forwarded by a peer, never a batch"))
			return
		}
		item.Header.Del(api.HeaderPlainPeer)
		if from != "" {
			item.Header.Set(api.HeaderPlainPeer, from)
		}
		full.ServeHTTP(w, item)
	})
	if err := hopbatch.Serve(w, r, h, batchLimits()); err != nil {
		return badRequest("%v", err)
	}
	return nil
}
