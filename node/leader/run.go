package leader

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// Raft is the Raft store as the leader uses it: writes applied here, and
// the membership.
type Raft interface {
	ApplyCommand(ctx context.Context, t raftfsm.Type, body any) (any, error)
	Servers(ctx context.Context) ([]raftstore.Server, error)
	AddVoter(ctx context.Context, id, addr string) error
	AddNonvoter(ctx context.Context, id, addr string) error
	RemoveServer(ctx context.Context, id string) error
}

// Pool is the gossip pool: who is alive, and what each reports.
type Pool interface {
	Members() []gossip.Member
	// Changed is closed at the next change of the pool.
	Changed() <-chan struct{}
	Join(ctx context.Context, addrs []string) (int, error)
}

// Jobs is the job manager's leader side.
type Jobs interface {
	// ReconcileJobs fails the jobs of peers that went away and forgets old
	// ended ones.
	ReconcileJobs(ctx context.Context) error
}

// Config is what the leader is given: only what it uses.
type Config struct {
	// Name is this node's name.
	Name string
	FSM  *raftfsm.FSM
	Raft Raft
	Pool Pool
	Jobs Jobs
	// Init is the Init of the cluster this peer formed (false when it has
	// none to propose); OnInit runs (on a goroutine of its own) once this
	// leader has applied it: the peer hands out the first admin token.
	Init   func() (raftfsm.Init, bool)
	OnInit func()
	// Restoring, when set, says the peer formed its cluster from a
	// snapshot it has yet to install: the state comes from it, not an Init.
	Restoring func() bool
	// Remove removes a peer for good (the membership's RemoveNode): the
	// leader calls it for a peer gone for ReapAfter.
	Remove func(ctx context.Context, name, by string) error
	// Interval is the longest time between the leader's passes.
	Interval time.Duration
	// ReapAfter is how long a peer may be dead before it leaves the Raft
	// configuration; NotReadyGrace how long a new leader waits before it
	// marks NOT READY a node gossip does not know.
	ReapAfter, NotReadyGrace time.Duration
	// Replicas, when positive, bounds the Raft group's non-voting members
	// (replicas, replanReplicas): the leader keeps that many live ones,
	// spread over failure domains, and every other peer follows the log
	// through a member (node/follow). 0: every live admitted peer is a
	// member, a voter or a non-voter.
	Replicas int
	// ReplaceAfter is how long a replica may be dead before another takes
	// its place (0: DefaultReplaceAfter).
	ReplaceAfter time.Duration
	Log          *slog.Logger
}

// Leader is the leader's work; it runs while its peer leads (Run) and
// places VMs on the leader (Place).
type Leader struct {
	cfg    Config
	placer placer

	mu     sync.Mutex
	since  time.Time            // start of the term; zero when not leading
	nudged map[string]time.Time // when each absent peer was last nudged
	ctx    context.Context      // the term's
	wg     sync.WaitGroup       // the term's goroutines
}

// New returns the leader's work; Run runs a term of it.
func New(cfg Config) *Leader {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Leader{cfg: cfg}
}

// Run is the leader's work for a term that began at since, once the term's
// barrier is applied: initialise a new cluster, then keep Raft membership,
// node records and jobs in step with gossip, at every change of the pool
// and every Interval, until ctx ends.
func (l *Leader) Run(ctx context.Context, since time.Time) {
	l.mu.Lock()
	l.since, l.ctx = since, ctx
	l.mu.Unlock()
	defer func() {
		l.wg.Wait()
		l.mu.Lock()
		l.since = time.Time{}
		l.mu.Unlock()
	}()
	log := l.cfg.Log
	l.wg.Go(func() { l.expireVMs(ctx) })
	tick := time.NewTicker(l.cfg.Interval)
	defer tick.Stop()
	for {
		changed := l.cfg.Pool.Changed()
		if err := l.ensureInit(ctx); err != nil && ctx.Err() == nil {
			log.Error("cannot initialise the cluster", "err", err)
		}
		if err := l.reconcileMembership(ctx); err != nil && ctx.Err() == nil {
			log.Warn("membership", "err", err)
		}
		if err := l.reconcileNodes(ctx); err != nil && ctx.Err() == nil {
			log.Warn("node status", "err", err)
		}
		if err := l.cfg.Jobs.ReconcileJobs(ctx); err != nil && ctx.Err() == nil {
			log.Warn("jobs", "err", err)
		}
		select {
		case <-ctx.Done():
			log.Info("leader work stopped")
			return
		case <-tick.C:
		case <-changed:
		}
	}
}

// leaderFor is how long this term has lasted (0 when not leading).
func (l *Leader) leaderFor() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.since.IsZero() {
		return 0
	}
	return time.Since(l.since)
}

// VoterTarget is how many voters a cluster of n peers should have.
func VoterTarget(n int) int {
	if n >= 5 {
		return 5
	}
	return 3
}
