package hotpool

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/internal/backoff"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
)

// Proposer proposes a command through the leader (the peer's Apply).
type Proposer interface {
	Apply(ctx context.Context, t raftfsm.Type, body any) (any, error)
}

// Readiness says whether the replica has caught up with the cluster since
// the peer started: until then the pool touches nothing.
type Readiness interface {
	CaughtUp() bool
	CaughtUpCh() <-chan struct{}
}

// Templates restores a domain from the node's booted template of a shape
// (false: the node holds no usable one); Loaded is closed once the
// templates a previous run left are taken up.
type Templates interface {
	RestoreShape(ctx context.Context, key string, spec hypervisor.Spec, who string) (bool, error)
	Loaded() <-chan struct{}
}

// DefaultFillTimeout bounds one fill unless Config says otherwise.
const DefaultFillTimeout = 5 * time.Minute

// Config is what the pool is given.
type Config struct {
	// Name is this node's name; Bind its address (a claimed guest's
	// forwards and screen listen on it).
	Name, Bind string
	FSM        *raftfsm.FSM
	Driver     hypervisor.Driver
	Images     *imagestore.Store
	Templates  Templates
	Proposer   Proposer
	Ready      Readiness
	// Healthy reports whether the hypervisor answers; a pass runs only
	// while it does.
	Healthy func() bool
	// MaxMemory caps the memory the node's hot guests take together: 0
	// for an eighth of the node's memory, negative for no hot guests.
	MaxMemory int64
	// AgentWait bounds the wait for a restored guest's agent, for its
	// identity step (default 30 s).
	AgentWait time.Duration
	// RefillDelay is how long the pool waits after a claim before it
	// restores the next guest (default 2 s): a restore takes the host's
	// CPU and disk for a second or more, which the claimed VM's first
	// seconds, when its user connects, need more.
	RefillDelay time.Duration
	// Interval is the longest time between passes (default 30 s).
	Interval time.Duration
	// Disk is the node's disk budget: a pooled guest's disk is held in it
	// for its bound (its image's size as the guest sees it, and tables),
	// and given back to any work that needs the room (nil: none kept).
	Disk *diskbudget.Budget
	// FillTimeout bounds one fill, the restore and the identity step
	// (default DefaultFillTimeout): a guest whose agent never reports the
	// step's end is destroyed, and its shape waits before it is tried again.
	FillTimeout time.Duration
	Registerer  prometheus.Registerer
	Log         *slog.Logger
}

// Pool keeps the node's hot guests.
type Pool struct {
	cfg     Config
	claimer hypervisor.HotClaimer // nil: the driver cannot hand a guest over; no pool
	disks   diskPather            // nil: the driver keeps no disk file per domain here
	metrics *metrics
	wake    chan struct{}

	mu sync.Mutex
	// ready are the guests restored and made their own, by domain: free,
	// or claimed in the replica and not yet handed over.
	ready map[string]*guest
	// handed are the domains handed to their VMs by this run, or being
	// handed, so that a hand-over tried again (its Running report was
	// lost) is not undone, and no pass takes one for an orphan.
	handed map[string]bool
	// going are the domains being destroyed: closed once they are gone.
	going map[string]chan struct{}
	// filling is the domain of the guest being restored ("" when none).
	filling string
	// failed are the shapes whose last fill failed, until tried again.
	failed *backoff.Keyed
	// claimed is when a guest was last handed over (RefillDelay).
	claimed time.Time
	// listed is when the pass last listed the hypervisor's domains (Run's
	// goroutine only).
	listed time.Time
}

// guest is a hot guest this run restored.
type guest struct {
	key, domain string
	memory      int64
	// disk is its image's size as the guest sees it; bound what its disk
	// file may take (diskBound).
	disk, bound int64
	readyAt     time.Time
}

// New returns the pool; Run starts it.
func New(cfg Config) *Pool {
	if cfg.Healthy == nil {
		cfg.Healthy = func() bool { return true }
	}
	if cfg.AgentWait <= 0 {
		cfg.AgentWait = 30 * time.Second
	}
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.RefillDelay <= 0 {
		cfg.RefillDelay = 2 * time.Second
	}
	if cfg.FillTimeout <= 0 {
		cfg.FillTimeout = DefaultFillTimeout
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	p := &Pool{cfg: cfg, wake: make(chan struct{}, 1), ready: map[string]*guest{}, handed: map[string]bool{}, going: map[string]chan struct{}{},
		failed: &backoff.Keyed{First: 30 * time.Second, Most: 10 * time.Minute}}
	p.claimer, _ = cfg.Driver.(hypervisor.HotClaimer)
	p.disks, _ = cfg.Driver.(diskPather)
	p.metrics = newMetrics(cfg.Registerer, p)
	cfg.Disk.Register("hot guests", diskbudget.GrowerFunc(p.diskGrowth))
	cfg.Disk.RegisterYielder("hot guests", p)
	return p
}

// Claim hands the VM whose deploy claimed a hot guest (vm.Domain) that
// guest as domain spec: its forwards and screen added, running. false when
// this run holds no such guest, or the hand-over failed: the domain is
// then gone (a guest half handed over is destroyed, never reused), and
// the VM starts as any new VM, under the same name.
func (p *Pool) Claim(ctx context.Context, vm raftfsm.VM, spec hypervisor.Spec) (bool, error) {
	start := time.Now()
	p.mu.Lock()
	if p.handed[vm.Domain] {
		p.mu.Unlock()
		return true, nil
	}
	g := p.ready[vm.Domain]
	delete(p.ready, vm.Domain)
	if g != nil {
		// Out of the pool and not yet the VM's: marked handed now, so that
		// no pass takes it for an orphan meanwhile (a pass's view of the
		// claims may predate this one).
		p.handed[vm.Domain] = true
	}
	gone := p.going[vm.Domain]
	p.mu.Unlock()
	if g == nil || p.claimer == nil {
		p.metrics.claims.WithLabelValues("missed").Inc()
		if gone != nil {
			select { // the pool is destroying it: the VM's domain waits
			case <-gone:
			case <-ctx.Done():
				return false, ctx.Err()
			}
		}
		// Left by an earlier run (never handed over): not the VM's yet.
		if err := p.cfg.Driver.Delete(ctx, vm.Domain); err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			return false, err
		}
		p.cfg.Log.Info("a claimed hot guest is not here; the VM starts without it", "vm", vm.Namespace+"/"+vm.Name, "domain", vm.Domain)
		return false, nil
	}
	if err := p.claimer.ClaimHot(ctx, spec); err != nil {
		p.mu.Lock()
		delete(p.handed, vm.Domain)
		p.mu.Unlock()
		p.metrics.claims.WithLabelValues("failed").Inc()
		p.cfg.Log.Warn("handing a hot guest over failed; destroying it, the VM starts without it", "vm", vm.Namespace+"/"+vm.Name, "domain", vm.Domain, "err", err)
		if derr := p.cfg.Driver.Delete(context.WithoutCancel(ctx), vm.Domain); derr != nil && !errors.Is(derr, hypervisor.ErrNotFound) {
			return false, derr
		}
		return false, nil
	}
	p.mu.Lock()
	p.claimed = time.Now()
	p.mu.Unlock()
	time.AfterFunc(p.cfg.RefillDelay, p.kick)
	p.metrics.claims.WithLabelValues("claimed").Inc()
	p.cfg.Log.Info("vm handed a hot guest", "vm", vm.Namespace+"/"+vm.Name, "domain", vm.Domain, "took", time.Since(start).Round(time.Millisecond),
		"pooled", time.Since(g.readyAt).Round(time.Second))
	return true, nil
}

// kick asks for a pass soon.
func (p *Pool) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Run keeps the pool in step with the hot configs until ctx ends.
func (p *Pool) Run(ctx context.Context) {
	if p.claimer == nil || p.cfg.Templates == nil {
		p.cfg.Log.Info("hot pools are off: the hypervisor cannot hand a running guest over", "driver", p.cfg.Driver.Describe())
		return
	}
	if _, ok := p.cfg.Driver.(hypervisor.GuestAgent); !ok {
		// Each guest is made its own through the agent before it is
		// pooled: without the channel, every fill would fail.
		p.cfg.Log.Info("hot pools are off: the hypervisor has no guest agent channel for the identity step", "driver", p.cfg.Driver.Describe())
		return
	}
	if p.cfg.Ready != nil {
		select {
		case <-ctx.Done():
			return
		case <-p.cfg.Ready.CaughtUpCh():
		}
	}
	// After a restart the node's record names templates this run has not
	// taken up yet: a fill from one before would fail, and wait its
	// back-off (30 s) to be tried again.
	select {
	case <-ctx.Done():
		return
	case <-p.cfg.Templates.Loaded():
	}
	tick := time.NewTicker(p.cfg.Interval)
	defer tick.Stop()
	for {
		fsm := p.cfg.FSM
		// Configs (hot counts, shapes), nodes (templates ready, a cordon)
		// and this node's VMs (claims, deletions).
		configs, nodes, vms := fsm.Watch(raftfsm.ResourceTopic(raftfsm.ResourceVMConfig)), fsm.Watch(raftfsm.ResourceTopic(raftfsm.ResourceNode)),
			fsm.Watch(raftfsm.NodeTopic(p.cfg.Name))
		if p.cfg.Healthy() {
			if again := p.pass(ctx); again {
				continue // a guest was restored: on to the next
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-configs:
		case <-nodes:
		case <-vms:
		case <-p.wake:
		case <-tick.C:
		}
	}
}
