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

// leaderRetries bounds how often one request is sent to a new leader.
const leaderRetries = 3

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
	for range leaderRetries {
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(api.HeaderNotLeader) == "" || req.GetBody == nil {
			return resp, err
		}
		addr, lerr := t.f.newLeader(req.Context(), req.URL.Host)
		if lerr != nil {
			return resp, nil // the refusal goes back: no new leader in time
		}
		body, berr := req.GetBody()
		if berr != nil {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		t.f.s.metrics.leaderRetries.Inc()
		req = req.Clone(req.Context())
		req.Body, req.URL.Host, req.Host = body, addr, addr
		resp, err = t.next.RoundTrip(req)
	}
	return resp, err
}

// newLeader waits, at most LeaderWait, for a leader other than the one at
// old, and returns its API address (this peer's own if it leads now).
func (f *forwarder) newLeader(ctx context.Context, old string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, f.s.cfg.LeaderWait)
	defer cancel()
	for {
		name, addr, err := f.s.raft.WaitLeader(ctx)
		if err != nil {
			return "", err
		}
		if name == f.s.replica.Name() {
			addr = f.s.peers.PeerAddr(name)
		}
		if addr != "" && addr != old {
			return addr, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no new leader: %w", ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
	}
}
