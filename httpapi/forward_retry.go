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
	if !refusedAsNotLeader(resp, err) || req.GetBody == nil {
		return resp, err
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.f.s.cfg.LeaderWait)
	defer cancel()
	for attempt := range leaderRetries {
		if !refusedAsNotLeader(resp, err) {
			return resp, err
		}
		addr, lerr := t.f.newLeader(ctx, req.URL.Host, attempt)
		if lerr != nil {
			return resp, nil // the refusal goes back: no leader took it in time
		}
		body, berr := req.GetBody()
		if berr != nil {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		t.f.s.metrics.leaderRetries.Inc()
		next := req.Clone(req.Context())
		next.Body, next.URL.Host, next.Host = body, addr, addr
		resp, err = t.next.RoundTrip(next)
		req = next
	}
	return resp, err
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
