package jobs

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/node/swarm"
	"github.com/svc-project/svc/raftfsm"
)

// Proposer proposes a command through the leader and returns the FSM's
// answer (the peer's Apply).
type Proposer interface {
	Apply(ctx context.Context, t raftfsm.Type, body any) (any, error)
}

// Readiness says whether the replica has caught up with the cluster since
// the peer started: until then no job runs.
type Readiness interface {
	CaughtUp() bool
}

// Disks exports a VM's disk (a push of a VM).
type Disks interface {
	// Export writes the domain's disk, flattened, to dst as a standalone
	// qcow2; the domain must be shut off.
	Export(ctx context.Context, domain, dst string) error
}

// Config is what the job manager is given: only what it uses.
type Config struct {
	// Name is this node's name, Arch its architecture.
	Name, Arch string
	// ChunkMiB is the size of the chunks a push cuts a disk into.
	ChunkMiB int
	// MaxJobs bounds the jobs this peer runs at once.
	MaxJobs int
	// Interval is the longest time between looks for queued jobs.
	Interval time.Duration
	FSM      *raftfsm.FSM
	// Keys unseal the namespaces' registry passwords.
	Keys   auth.Keys
	Images *imagestore.Store
	// Disks exports VMs' disks; nil where the hypervisor cannot (a push
	// of a VM then fails, saying so).
	Disks    Disks
	Proposer Proposer
	// Blobs fetches the blobs a cache job copies here.
	Blobs Blobs
	// Swarm shares the chunks of a registry pull with the other peers
	// pulling the same disk (nil: each pull reads the registry alone).
	Swarm *swarm.Service
	Ready Readiness
	// Disk is the budget of the data dir's disk: a pull holds room for
	// what it writes, or is refused (nil: no bound).
	Disk *diskbudget.Budget
	// Egress is the registries this peer may contact.
	Egress *ocidisk.Egress
	// Gate optionally refuses some registries (tests).
	Gate netgate.Gate
	// Registerer receives the job manager's metrics.
	Registerer prometheus.Registerer
	Log        *slog.Logger
}

// Manager runs this peer's jobs and answers the registry questions of the
// API.
type Manager struct {
	cfg     Config
	metrics *metrics
	ctx     context.Context // Run's; set before any job starts
	wg      sync.WaitGroup  // jobs under way
}

// New returns the job manager; Run starts its loop.
func New(cfg Config) *Manager {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	return &Manager{cfg: cfg, metrics: newMetrics(cfg.Registerer), ctx: context.Background()}
}

// Run runs this peer's jobs until ctx ends, and waits for those under way
// to stop.
func (m *Manager) Run(ctx context.Context) {
	m.ctx = ctx
	defer m.wg.Wait()
	m.jobLoop()
}

// metrics are the job manager's figures.
type metrics struct {
	pulledChunks *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		pulledChunks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_pull_chunks_total",
			Help: "Chunks of the svc disks this peer pulled, by where each came from: registry, peer (another peer pulling the same disk), local (a disk this peer holds) or resumed (written by an earlier, interrupted pull).",
		}, []string{"from"}),
	}
	r.MustRegister(m.pulledChunks)
	return m
}
