package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/svc-project/svc/api"
)

// A request forwarded to the leader can meet a peer that has just stopped
// leading: it refuses the request before running any of it (HeaderNotLeader).
// The forwarding peer then sends it to the new leader itself, a bounded
// number of times, so that a write through a follower during an election
// does not fail for the caller. It holds every forwarded body whole (they
// are all small JSON); any other refusal, or failure, reaches the caller as
// it is.

// maxReplayBody is the largest request body kept to be sent again: every
// JSON body fits (larger ones are refused with 413).
const maxReplayBody = maxJSONBody

// leaderRetries bounds how often one request is sent again; all its sends
// after the first refusal share one LeaderWait.
const leaderRetries = 10

// replayable reads a request body whole before it is forwarded (every
// forwarded route takes a JSON body of at most maxReplayBody), so that it can
// be sent again, and so that a body that is too large (413), too slow (408)
// or short of its Content-Length (400) is refused here with the same
// Status the peer that runs the route would give.
func replayable(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReplayBody))
	if err != nil {
		return bodyError(err)
	}
	if r.ContentLength >= 0 && int64(len(b)) != r.ContentLength {
		return badRequest("the request body is %d bytes, not the %d its Content-Length says", len(b), r.ContentLength)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return nil
}

// leaderRetry is the forwarder's transport: it sends a request refused by a
// former leader to the new one.
type leaderRetry struct {
	f    *forwarder
	next http.RoundTripper
}

func (t *leaderRetry) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if req.GetBody == nil {
		return resp, err
	}
	resp, _, err = t.f.toNewLeader(req.Context(), req.URL.Host, resp, err, func(addr string) (*http.Response, error) {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("the request's body: %w", err)
		}
		next := req.Clone(req.Context())
		next.Body, next.URL.Host, next.Host = body, addr, addr
		return t.next.RoundTrip(next)
	})
	return resp, err
}

// toNewLeader sends a request that the peer at addr refused unrun, as no
// longer the leader (resp, err: its answer), to the new leader, at most
// leaderRetries times within one LeaderWait; send sends it to the peer at
// an address. It returns the last answer and where it came from: the
// refusal itself when no leader took the request in time. The proxy
// (leaderRetry) and the batches of writes (forwardBatched) share it.
func (f *forwarder) toNewLeader(ctx context.Context, addr string, resp *http.Response, err error, send func(addr string) (*http.Response, error)) (*http.Response, string, error) {
	if !refusedAsNotLeader(resp, err) {
		return resp, addr, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.s.cfg.LeaderWait)
	defer cancel()
	for attempt := 0; attempt < leaderRetries && refusedAsNotLeader(resp, err); attempt++ {
		next, lerr := f.newLeader(ctx, addr, attempt)
		if lerr != nil {
			break // the refusal goes back: no leader took it in time
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		f.s.metrics.leaderRetries.Inc()
		addr = next
		resp, err = send(addr)
	}
	return resp, addr, err
}

// refusedAsNotLeader reports whether a peer refused a forwarded request,
// unrun, because it does not lead.
func refusedAsNotLeader(resp *http.Response, err error) bool {
	return err == nil && resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get(api.HeaderNotLeader) != ""
}

// newLeader returns the API address of the peer to send a refused request to
// next (this peer's own if it leads now), waiting until ctx ends. A leader
// other than the one at old is taken at once. The one at old is taken again
// only after a pause that grows with attempt: this peer's view of the leader
// may be stale, and in an election the peer that refused may win again.
func (f *forwarder) newLeader(ctx context.Context, old string, attempt int) (string, error) {
	pause := time.NewTimer(min(25*time.Millisecond<<attempt, 500*time.Millisecond))
	defer pause.Stop()
	paused := false
	for {
		name, addr, err := f.s.raft.WaitLeader(ctx)
		if err != nil {
			return "", err
		}
		if name == f.s.replica.Name() {
			addr = f.s.links.PeerAddr(name)
		}
		if addr != "" && (addr != old || paused) {
			return addr, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no leader took the request: %w", ctx.Err())
		case <-pause.C:
			paused = true
		case <-time.After(25 * time.Millisecond):
		}
	}
}
