package templates

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
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

// Readiness says whether the replica has caught up with the cluster.
type Readiness interface {
	CaughtUpCh() <-chan struct{}
}

// Config is what the manager is given.
type Config struct {
	// Name is this node's name.
	Name   string
	FSM    *raftfsm.FSM
	Driver hypervisor.Driver
	Images *imagestore.Store
	// Dir keeps a record of each ready template (its shape and sizes).
	Dir      string
	Proposer Proposer
	// Max bounds how many templates the node keeps (0: none; those an
	// earlier run left are removed); MaxBytes their disk use, memory files
	// and disks (default 16 GiB).
	Max      int
	MaxBytes int64
	// Disk is the budget of the data dir's disk: a build holds room for
	// the template's memory file and disk, or waits (nil: no bound).
	Disk *diskbudget.Budget
	// Ready says whether the replica has caught up since the peer started:
	// until then the manager touches nothing. Healthy reports whether the
	// hypervisor answers; a pass runs only while it does.
	Ready   Readiness
	Healthy func() bool
	// GuestReady reports whether a booting template's guest is ready to be
	// saved, given its SSH forward's address (default: it answers with an
	// SSH banner); BootTimeout bounds the wait (default hypervisor.BootTimeout).
	GuestReady  func(ctx context.Context, addr string) error
	BootTimeout time.Duration
	// Interval is the longest time between passes (default 30 s).
	Interval time.Duration
	// Backoff is the first wait before a template whose build failed is
	// tried again (default 1 minute, doubling to an hour).
	Backoff    time.Duration
	Registerer prometheus.Registerer
	Log        *slog.Logger
}

// Manager keeps the node's templates.
type Manager struct {
	cfg     Config
	mem     hypervisor.MemorySnapshots // nil: the driver cannot; no templates
	metrics *metrics
	wake    chan struct{}
	// loaded is closed once the templates a previous run left are taken
	// up (or there are none to take: Run ended first, or is off).
	loaded     chan struct{}
	loadedOnce sync.Once

	mu     sync.Mutex
	ready  map[string]*entry // by key
	failed *backoff.Keyed    // by key: builds that failed, until tried again
}

// entry is a ready template.
type entry struct {
	raftfsm.Template
	// MemoryBytes is its memory file's size when saved: a file of another
	// size (truncated) is not restored.
	MemoryBytes int64 `json:"memoryBytes"`
	users       int   // restores under way
	broken      bool  // failed to restore: dropped once unused
}

// New returns the manager; Run starts it. Without a driver that saves
// memory it keeps no templates (Restore always answers false).
func New(cfg Config) *Manager {
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = 16 << 30
	}
	if cfg.GuestReady == nil {
		cfg.GuestReady = SSHBanner
	}
	if cfg.Healthy == nil {
		cfg.Healthy = func() bool { return true }
	}
	if cfg.BootTimeout == 0 {
		cfg.BootTimeout = hypervisor.BootTimeout
	}
	if cfg.Interval == 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Registerer == nil {
		cfg.Registerer = prometheus.NewRegistry()
	}
	m := &Manager{cfg: cfg, metrics: newMetrics(cfg.Registerer), wake: make(chan struct{}, 1), loaded: make(chan struct{}),
		ready: map[string]*entry{}, failed: &backoff.Keyed{First: cfg.Backoff, Most: time.Hour}}
	m.mem, _ = cfg.Driver.(hypervisor.MemorySnapshots)
	return m
}

// Loaded is closed once the templates a previous run of the peer left are
// taken up (at once on a manager that keeps none): until then a template
// the node's record names may not be restorable yet.
func (m *Manager) Loaded() <-chan struct{} {
	if m == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return m.loaded
}

func (m *Manager) markLoaded() { m.loadedOnce.Do(func() { close(m.loaded) }) }

// Run keeps the templates in step with the warm configs until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	defer m.markLoaded() // none to wait for once Run has ended
	if m.mem == nil {
		m.cfg.Log.Info("booted templates are off: the hypervisor cannot save a guest's memory", "driver", m.cfg.Driver.Describe())
		return
	}
	if err := os.MkdirAll(m.cfg.Dir, 0o700); err != nil {
		m.cfg.Log.Error("booted templates are off", "err", err)
		return
	}
	if m.cfg.Ready != nil {
		select {
		case <-ctx.Done():
			return
		case <-m.cfg.Ready.CaughtUpCh():
		}
	}
	m.load(ctx)
	m.markLoaded()
	tick := time.NewTicker(m.cfg.Interval)
	defer tick.Stop()
	for {
		fsm := m.cfg.FSM
		configs, blobs, images := fsm.Watch(raftfsm.ResourceTopic(raftfsm.ResourceVMConfig)),
			fsm.Watch(raftfsm.ResourceTopic(raftfsm.ResourceBlob)), fsm.Watch(raftfsm.ResourceTopic(raftfsm.ResourceImage))
		if m.cfg.Healthy() {
			if again := m.pass(ctx); again {
				continue // a template was built: on to the next
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-configs:
		case <-blobs:
		case <-images:
		case <-m.wake:
		case <-tick.C:
		}
	}
}

// pass drops the templates nobody wants (or that broke), reports the ready
// set, and builds one missing template; it returns true when it built one.
func (m *Manager) pass(ctx context.Context) bool {
	want := m.desired()
	if m.cfg.Max == 0 {
		want = nil
	}
	m.mu.Lock()
	var drop []string
	for key, e := range m.ready {
		if _, ok := want[key]; (!ok || e.broken) && e.users == 0 {
			drop = append(drop, key)
			delete(m.ready, key)
		}
	}
	m.mu.Unlock()
	for _, key := range drop {
		m.remove(ctx, key)
	}
	m.report(ctx)
	for _, sh := range orderedShapes(want) {
		key := sh.Key()
		if m.isReady(key) || m.backingOff(key) {
			continue
		}
		if !m.roomFor(sh) {
			m.cfg.Log.Info("no room for another template", "key", key, "max", m.cfg.Max, "maxBytes", m.cfg.MaxBytes)
			return false
		}
		if !m.freeFor(sh) {
			continue // its boot would take memory the node's VMs hold: later
		}
		if err := m.build(ctx, sh); err != nil {
			if ctx.Err() != nil {
				return false
			}
			m.fail(key, err)
			return true // the next shape's turn
		}
		m.report(ctx)
		return true
	}
	return false
}

// desired returns the shapes of the warm configs whose VMs this node can
// run (of its namespace, the only one placed here, and of a size it holds)
// and whose image it holds, by key: another namespace's configs take none
// of its template slots.
func (m *Manager) desired() map[string]raftfsm.Shape {
	fsm := m.cfg.FSM
	node, ok := fsm.Node(m.cfg.Name)
	if !ok {
		return nil
	}
	want := map[string]raftfsm.Shape{}
	for _, cfg := range fsm.WarmConfigs() {
		if cfg.Namespace != node.Namespace {
			continue
		}
		sh, ok := fsm.WarmShape(cfg)
		if !ok {
			continue
		}
		if b, ok := fsm.Blob(sh.ImageDigest); !ok || !slices.Contains(b.Holders, m.cfg.Name) {
			continue
		}
		if sh.MemoryBytes > node.Capacity.MemoryBytes || (sh.OS == raftfsm.OSMacOS && node.Hypervisor != "vz") {
			continue
		}
		want[sh.Key()] = sh
	}
	return want
}

// orderedShapes returns the shapes in key order (the same on every pass).
func orderedShapes(want map[string]raftfsm.Shape) []raftfsm.Shape {
	out := make([]raftfsm.Shape, 0, len(want))
	for _, sh := range want {
		out = append(out, sh)
	}
	slices.SortFunc(out, func(a, b raftfsm.Shape) int { return strings.Compare(a.Key(), b.Key()) })
	return out
}

func (m *Manager) isReady(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.ready[key]
	return ok
}

func (m *Manager) backingOff(key string) bool { return m.failed.Waiting(key, time.Now()) }

// fail records a failed build: the key waits before its next try.
func (m *Manager) fail(key string, err error) {
	wait := m.failed.Fail(key, time.Now())
	m.metrics.builds.WithLabelValues("failed").Inc()
	m.cfg.Log.Warn("building a template failed", "key", key, "retry in", wait, "err", err)
}

// roomFor reports whether one more template of shape sh fits the caps
// (its memory file is at most the guest's memory).
func (m *Manager) roomFor(sh raftfsm.Shape) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	var used int64
	for _, e := range m.ready {
		used += e.SizeBytes
	}
	return len(m.ready) < m.cfg.Max && used+sh.MemoryBytes <= m.cfg.MaxBytes
}

// freeFor reports whether the node's VMs leave the memory a template of
// shape sh boots in: a build takes what placement does not count, so it
// waits while the node is full.
func (m *Manager) freeFor(sh raftfsm.Shape) bool {
	n, ok := m.cfg.FSM.Node(m.cfg.Name)
	return ok && n.Capacity.MemoryBytes-n.Used.MemoryBytes >= sh.MemoryBytes
}

// report tells the replicated state which templates are ready here, when
// that changed.
func (m *Manager) report(ctx context.Context) {
	m.mu.Lock()
	ts := []raftfsm.Template{}
	for _, e := range m.ready {
		if !e.broken {
			ts = append(ts, e.Template)
		}
	}
	m.mu.Unlock()
	slices.SortFunc(ts, func(a, b raftfsm.Template) int { return strings.Compare(a.Key, b.Key) })
	if n, ok := m.cfg.FSM.Node(m.cfg.Name); ok && slices.EqualFunc(n.Templates, ts, func(a, b raftfsm.Template) bool {
		return a.Key == b.Key && a.SizeBytes == b.SizeBytes
	}) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := m.cfg.Proposer.Apply(rctx, raftfsm.TypeNodeTemplates, raftfsm.NodeTemplates{Node: m.cfg.Name, Templates: ts}); err != nil && !errors.Is(err, context.Canceled) {
		m.cfg.Log.Warn("report templates", "err", err)
	}
}

// kick asks for a pass soon.
func (m *Manager) kick() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

type metrics struct {
	builds   *prometheus.CounterVec
	restores *prometheus.CounterVec
}

func newMetrics(r prometheus.Registerer) *metrics {
	m := &metrics{
		builds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_template_builds_total",
			Help: "Booted templates built on this node, by result: ready or failed.",
		}, []string{"result"}),
		restores: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_template_restores_total",
			Help: "VMs started from a booted template on this node, by result: restored, or failed (the template was dropped and the VM booted).",
		}, []string{"result"}),
	}
	r.MustRegister(m.builds, m.restores)
	return m
}
