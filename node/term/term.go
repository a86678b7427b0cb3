package term

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// ErrNotLeader is returned by WaitReady on a peer that does not lead.
var ErrNotLeader = errors.New("not the leader")

// Raft is what terms are run on (*raftstore.Store).
type Raft interface {
	// LeaderCh delivers true when this peer becomes leader, false when it
	// stops being leader.
	LeaderCh() <-chan bool
	// LeaderChanged is closed at the next change of leader.
	LeaderChanged() <-chan struct{}
	IsLeader() bool
	// Barrier returns once every earlier entry is applied.
	Barrier(ctx context.Context) error
}

// Config is what Terms are made of.
type Config struct {
	Raft Raft
	// Work is the leader's work for one term (since: when it began); it
	// returns when ctx ends with the term.
	Work func(ctx context.Context, since time.Time)
	// Ready is called when a term's barrier is applied (may be nil).
	Ready func()
	// Retry is the pause between failed barriers (default 1 s); a barrier
	// is given BarrierTimeout (default 10 s).
	Retry, BarrierTimeout time.Duration
	Log                   *slog.Logger
}

// Terms runs the leader's work, one term at a time.
type Terms struct {
	cfg Config

	mu    sync.Mutex
	ready bool // this term's barrier has been applied
	// readyCh is closed when ready becomes true, and replaced when the
	// term ends after that.
	readyCh chan struct{}
}

// New returns the terms of a peer; Run runs them.
func New(cfg Config) *Terms {
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.BarrierTimeout <= 0 {
		cfg.BarrierTimeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Terms{cfg: cfg, readyCh: make(chan struct{})}
}

// Run starts a term's work each time this peer becomes leader and stops it
// (waiting for it) when it no longer is, until ctx ends.
func (t *Terms) Run(ctx context.Context) {
	var cur *running
	stop := func() {
		if cur != nil {
			cur.cancel()
			<-cur.done
			cur = nil
		}
	}
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case isLeader := <-t.cfg.Raft.LeaderCh():
			if isLeader && cur == nil {
				cur = t.start(ctx)
			} else if !isLeader {
				stop()
			}
		}
	}
}

// running is a term's work in flight.
type running struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs a term until its context is cancelled.
func (t *Terms) start(ctx context.Context) *running {
	ctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		t.lead(ctx)
	}()
	return r
}

// lead is one term: the barrier, then the work.
func (t *Terms) lead(ctx context.Context) {
	since := time.Now()
	defer func() {
		t.mu.Lock()
		if t.ready {
			t.ready, t.readyCh = false, make(chan struct{})
		}
		t.mu.Unlock()
	}()
	t.cfg.Log.Info("became leader")
	for {
		bctx, cancel := context.WithTimeout(ctx, t.cfg.BarrierTimeout)
		err := t.cfg.Raft.Barrier(bctx)
		cancel()
		if err == nil {
			break
		}
		t.cfg.Log.Warn("barrier failed, retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(t.cfg.Retry):
		}
	}
	t.mu.Lock()
	t.ready = true
	close(t.readyCh)
	t.mu.Unlock()
	if t.cfg.Ready != nil {
		t.cfg.Ready()
	}
	t.cfg.Work(ctx, since)
}

// WaitReady returns nil once this peer leads with its term's barrier
// applied (a leader just elected is waited for, bounded by ctx);
// ErrNotLeader when it does not lead (or stops leading while waited for);
// ctx's error when it ends first.
func (t *Terms) WaitReady(ctx context.Context) error {
	for {
		changed := t.cfg.Raft.LeaderChanged() // before the look: no change missed
		if !t.cfg.Raft.IsLeader() {
			return ErrNotLeader
		}
		t.mu.Lock()
		ready, readyCh := t.ready, t.readyCh
		t.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-readyCh:
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
