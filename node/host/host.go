package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
)

// Proposer proposes a command through the leader and returns the FSM's
// answer (the peer's Apply).
type Proposer interface {
	Apply(ctx context.Context, t raftfsm.Type, body any) (any, error)
}

// Blobs gets this peer a blob a VM starts from (from a peer that holds it,
// or the VM's registry) and records that this peer holds it; HoldBlob keeps
// a blob here (no collection removes it) until release is called.
type Blobs interface {
	EnsureBlob(ctx context.Context, vm raftfsm.VM, digest string) error
	HoldBlob(digest string) (release func(), err error)
}

// Templates starts a new VM from a booted template of its shape where the
// node holds one (false: the VM boots).
type Templates interface {
	Restore(ctx context.Context, vm raftfsm.VM, spec hypervisor.Spec) (bool, error)
}

// HotPool hands a VM whose deploy claimed a hot guest (VM.Domain) that
// guest, running, as domain spec; false when it has no such guest any more
// or the hand-over failed (the guest is then gone, and the VM starts as
// any other, under the same domain name).
type HotPool interface {
	Claim(ctx context.Context, vm raftfsm.VM, spec hypervisor.Spec) (bool, error)
}

// Readiness says whether the replica has caught up with the cluster since
// the peer started: until then the host touches no domain.
type Readiness interface {
	CaughtUp() bool
	// CaughtUpCh is closed once it has.
	CaughtUpCh() <-chan struct{}
}

// Config is what the host agent is given: only what it uses.
type Config struct {
	// Name is this node's name; Bind its address (VNC and the forwards
	// listen on it).
	Name, Bind string
	// Graceful, when set, says whether the peer stops cleanly (not as a
	// crash would): the host then finishes the removals of deleted VMs'
	// domains before it returns (finishRemovals).
	Graceful func() bool
	FSM      *raftfsm.FSM
	Driver   hypervisor.Driver
	// Disk is the budget of the data dir's disk: a VM's disk, a resize and
	// a commit or save take room in it before they write, or are refused;
	// nil sets no bound.
	Disk   *diskbudget.Budget
	Images *imagestore.Store
	// Shared gives VMs their namespace's shared folder; nil when this node
	// offers no shared storage.
	Shared   SharedFolders
	Proposer Proposer
	Blobs    Blobs
	// Templates, when set, starts new VMs from booted templates.
	Templates Templates
	// Hot, when set, hands VMs the hot guests their deploys claimed.
	Hot   HotPool
	Ready Readiness
	// Healthy reports whether the hypervisor answers; a pass runs only
	// while it does.
	Healthy func() bool
	// Interval is the longest time between passes.
	Interval time.Duration
	// AgentWait is how long a started guest's agent may take to answer
	// before its identity step is reported none (default 10 s); the step
	// still runs if the agent answers later.
	AgentWait time.Duration
	// Registerer receives the host's metrics.
	Registerer prometheus.Registerer
	Log        *slog.Logger
}

// Host is the VM host agent of a peer: its reconciler and its VMs' workers.
type Host struct {
	cfg     Config
	pauser  hypervisor.Pauser // nil: the driver cannot suspend
	disks   hypervisor.Disks  // nil: the driver cannot revert or export
	metrics *metrics
	ctx     context.Context // Run's; set before any worker starts
	wg      sync.WaitGroup  // removals under way

	mu       sync.Mutex
	workers  map[string]*vmWorker // by "namespace/name"
	removing map[string]bool      // domains being removed, by name
}

// SharedFolders are the namespaces' shared folders of this host.
type SharedFolders interface {
	// Folder returns namespace ns's folder, ready, with a bound of maxBytes.
	Folder(ctx context.Context, ns string, maxBytes int64) (string, error)
}

// New returns the host agent; Run starts it.
func New(cfg Config) *Host {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	if cfg.AgentWait <= 0 {
		cfg.AgentWait = 10 * time.Second
	}
	h := &Host{cfg: cfg, metrics: newMetrics(cfg.Registerer), workers: map[string]*vmWorker{}, removing: map[string]bool{}}
	h.pauser, _ = cfg.Driver.(hypervisor.Pauser)
	h.disks, _ = cfg.Driver.(hypervisor.Disks)
	if cfg.Disk != nil {
		cfg.Disk.Register("vm disks", diskbudget.GrowerFunc(h.DiskGrowth))
	}
	return h
}

// The driver's optional roles, refused plainly where it lacks them.

func (h *Host) suspend(ctx context.Context, name string) error {
	if h.pauser == nil {
		return fmt.Errorf("suspend: %w", hypervisor.ErrUnsupported)
	}
	return h.pauser.Suspend(ctx, name)
}

func (h *Host) resume(ctx context.Context, name string) error {
	if h.pauser == nil {
		return fmt.Errorf("resume: %w", hypervisor.ErrUnsupported)
	}
	if err := h.pauser.Resume(ctx, name); err != nil {
		return err
	}
	// The guest's clock stood still while it was paused: its agent sets it.
	if err := hypervisor.SyncGuestClock(ctx, h.cfg.Driver, name, 0); err != nil && !errors.Is(err, hypervisor.ErrNoAgent) {
		h.cfg.Log.Warn("set the clock of a resumed guest", "domain", name, "err", err)
	}
	return nil
}

func (h *Host) revert(ctx context.Context, s hypervisor.Spec) error {
	if h.disks == nil {
		return fmt.Errorf("revert: %w", hypervisor.ErrUnsupported)
	}
	return h.disks.Revert(ctx, s)
}

func (h *Host) export(ctx context.Context, name, dst string) error {
	if h.disks == nil {
		return fmt.Errorf("write the disk: %w", hypervisor.ErrUnsupported)
	}
	return h.disks.Export(ctx, name, dst)
}

// metrics are the host agent's figures.
type metrics struct {
	reconcilePasses *prometheus.CounterVec
	vmRuns          *prometheus.CounterVec
	guestRuns       prometheus.Counter
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		reconcilePasses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_vm_reconcile_passes_total",
			Help: "Passes of the VM reconciler, by result: done, failed, or waiting (the replica has not caught up since the start, so it touched nothing).",
		}, []string{"result"}),
		vmRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_vm_worker_runs_total",
			Help: "Runs of the per-VM workers that converge domains, by result: ok, retry (tried again on the next pass) or failed (the VM is Failed).",
		}, []string{"result"}),
	}
	m.guestRuns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "svc_guest_runs_total",
		Help: "Programs run in this host's guests through their agents (the API's run).",
	})
	r.MustRegister(m.reconcilePasses, m.vmRuns, m.guestRuns)
	return m
}
