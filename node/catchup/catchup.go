package catchup

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Replica is the local replica's applied index.
type Replica interface {
	Index() uint64
	// WaitIndex waits, bounded by ctx, until the replica has applied index.
	WaitIndex(ctx context.Context, index uint64) error
}

// Config configures a Tracker.
type Config struct {
	Replica Replica
	// LeaderIndex asks the leader (or this peer, when it leads) for the
	// index of the last command it applied.
	LeaderIndex func(ctx context.Context) (uint64, error)
	Log         *slog.Logger
}

// Tracker is whether the replica has caught up since the start, and the
// syncs with the leader.
type Tracker struct {
	cfg  Config
	once sync.Once
	ch   chan struct{}
	sync indexSync
}

// New returns a Tracker of a replica that has not caught up yet.
func New(cfg Config) *Tracker {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Tracker{cfg: cfg, ch: make(chan struct{})}
}

// CaughtUpCh is closed once the replica has caught up.
func (t *Tracker) CaughtUpCh() <-chan struct{} { return t.ch }

// CaughtUp reports whether the replica has caught up with the cluster since
// the peer started.
func (t *Tracker) CaughtUp() bool {
	select {
	case <-t.ch:
		return true
	default:
		return false
	}
}

// WaitCaughtUp waits, bounded by ctx, until the replica has caught up, and
// reports whether it has.
func (t *Tracker) WaitCaughtUp(ctx context.Context) bool {
	select {
	case <-t.ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// Mark records that the replica has caught up (how says how, for the log).
func (t *Tracker) Mark(how string) {
	t.once.Do(func() {
		close(t.ch)
		t.cfg.Log.Info("replica caught up with the cluster", "index", t.cfg.Replica.Index(), "how", how)
	})
}

// Run syncs the replica with the leader once, retrying until it succeeds,
// the replica is marked caught up otherwise, or ctx ends (each attempt has
// a deadline; the retries back off to a second).
func (t *Tracker) Run(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for !t.CaughtUp() {
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := t.SyncReplica(actx)
		cancel()
		if err == nil {
			t.Mark("synced with the leader")
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.ch:
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
func (t *Tracker) SyncReplica(ctx context.Context) error {
	idx, err := t.sync.index(ctx, t.cfg.LeaderIndex)
	if err != nil {
		return err
	}
	return t.cfg.Replica.WaitIndex(ctx, idx)
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
	done    chan struct{}
	index   uint64
	err     error
	callers int // how many wait for it
}

// roundTimeout bounds one leader round trip.
const roundTimeout = 5 * time.Second

func (s *indexSync) index(ctx context.Context, fetch func(context.Context) (uint64, error)) (uint64, error) {
	s.mu.Lock()
	r := s.pending
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		s.pending = r
	}
	r.callers++
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
		ctx, cancel := context.WithTimeout(context.Background(), roundTimeout)
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
