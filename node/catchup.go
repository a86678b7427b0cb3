package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
)

// A peer that starts (or restarts) holds whatever its data dir had: a stale
// replica. Until it has applied every command the leader had applied when the
// peer asked (it has "caught up"), it serves no authenticated call (503 with
// Retry-After, never a stale list or a 401 for a good token) and creates or
// starts no domain (deletes of domains nobody wants may go first).

// CommitIndexPath is the API path where the leader tells the index of the
// last command it applied (the path keeps its first name).
const CommitIndexPath = "/api/v1/internal/commit-index"

// Errors of catching up.
var (
	errNoLeader      = errors.New("no leader is known")
	errLeaderNotDone = errors.New("the leader has not yet applied the entries of earlier terms")
)

// caughtUp is closed once the replica has caught up after the start.
type caughtUp struct {
	once sync.Once
	ch   chan struct{}
}

// CaughtUpCh is closed once the replica has caught up.
func (p *Peer) CaughtUpCh() <-chan struct{} { return p.caught.ch }

// CaughtUp reports whether the replica has caught up with the cluster since
// this peer started.
func (p *Peer) CaughtUp() bool {
	select {
	case <-p.caught.ch:
		return true
	default:
		return false
	}
}

// WaitCaughtUp waits, bounded by ctx, until the replica has caught up, and
// reports whether it has.
func (p *Peer) WaitCaughtUp(ctx context.Context) bool {
	select {
	case <-p.caught.ch:
		return true
	case <-ctx.Done():
		return false
	}
}

func (p *Peer) markCaughtUp(how string) {
	p.caught.once.Do(func() {
		close(p.caught.ch)
		p.cfg.Log.Info("replica caught up with the cluster", "index", p.FSM().Index(), "how", how)
	})
}

// catchUpLoop syncs the replica with the leader once, retrying until it
// succeeds or the peer stops (each attempt has a deadline).
func (p *Peer) catchUpLoop() {
	backoff := 50 * time.Millisecond
	for !p.CaughtUp() {
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
		err := p.SyncReplica(ctx)
		cancel()
		if err == nil {
			p.markCaughtUp("synced with the leader")
			return
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.caught.ch:
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

// SyncReplica waits until this replica has applied every command the leader
// had applied when it was asked. Concurrent callers share leader round
// trips (at most one is in flight), but each waits for a round trip that
// started after it called.
func (p *Peer) SyncReplica(ctx context.Context) error {
	idx, err := p.sync.index(ctx, p.leaderAppliedIndex)
	if err != nil {
		return err
	}
	return p.FSM().WaitIndex(ctx, idx)
}

// AppliedIndex returns, if this peer leads, the index of the last command
// its replica applied once it has applied the entries of earlier terms (a
// leader just elected is waited for, bounded by ctx): every acknowledged
// write is at or below it (a write is acknowledged once the leader applied
// it). It is not raft's commit index: the no-op that opens a term and
// barriers are committed entries no replica records, so a replica waiting
// for them would wait for the next write.
func (p *Peer) AppliedIndex(ctx context.Context) (uint64, error) {
	for {
		changed := p.store.LeaderChanged() // before the look: no change missed
		if !p.IsLeader() {
			return 0, fmt.Errorf("peer %s is not the leader", p.cfg.Name)
		}
		p.mu.Lock()
		ready, readyCh := p.leaderReady, p.leaderReadyCh
		p.mu.Unlock()
		if ready {
			return p.FSM().Index(), nil
		}
		select {
		case <-readyCh:
		case <-changed:
		case <-ctx.Done():
			return 0, fmt.Errorf("%w (waited: %w)", errLeaderNotDone, ctx.Err())
		}
	}
}

// leaderAppliedIndex asks the leader (or this peer, if it leads) for the
// index of the last command it applied.
func (p *Peer) leaderAppliedIndex(ctx context.Context) (uint64, error) {
	if p.IsLeader() {
		return p.AppliedIndex(ctx)
	}
	_, addr := p.LeaderAPI()
	if addr == "" {
		return 0, errNoLeader
	}
	var out api.CommitIndex
	cl := &api.Client{BaseURL: p.PeerScheme() + "://" + addr, HTTP: p.peerHTTP}
	if err := cl.Do(ctx, http.MethodGet, CommitIndexPath, nil, &out); err != nil {
		return 0, fmt.Errorf("ask the leader for its applied index: %w", err)
	}
	return out.Index, nil
}

// indexSync runs leader round trips one at a time. A caller joins the round
// that has not started yet (starting it if none runs), never one already in
// flight, whose answer may predate what the caller needs to see.
type indexSync struct {
	mu      sync.Mutex
	running bool
	pending *syncRound
}

type syncRound struct {
	done  chan struct{}
	index uint64
	err   error
}

func (s *indexSync) index(ctx context.Context, fetch func(context.Context) (uint64, error)) (uint64, error) {
	s.mu.Lock()
	r := s.pending
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		s.pending = r
	}
	if !s.running {
		s.running, s.pending = true, nil
		go s.run(r, fetch)
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.index, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("sync the replica: %w", ctx.Err())
	}
}

func (s *indexSync) run(r *syncRound, fetch func(context.Context) (uint64, error)) {
	for r != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r.index, r.err = fetch(ctx)
		cancel()
		close(r.done)
		s.mu.Lock()
		r, s.pending = s.pending, nil
		if r == nil {
			s.running = false
		}
		s.mu.Unlock()
	}
}
