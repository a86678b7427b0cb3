package health

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// probeTimeout bounds one probe of the hypervisor (and its guard).
const probeTimeout = 5 * time.Second

// unguardTimeout bounds the guard's removal on a clean stop.
const unguardTimeout = 30 * time.Second

// NoDriver is the problem of a node without a hypervisor driver.
const NoDriver = "no hypervisor driver"

// Config is what a Monitor needs.
type Config struct {
	// Driver runs the node's VMs; nil: the node takes none.
	Driver hypervisor.Driver
	// Targets returns the cluster's ports the VMs must not reach.
	Targets func() []hypervisor.Target
	// Announce gossips the peer's report (which reads Problem).
	Announce func() error
	// Interval is the time between probes.
	Interval time.Duration
	Log      *slog.Logger
}

// Monitor probes the node's hypervisor and keeps its guests guarded.
type Monitor struct {
	cfg      Config
	announce chan struct{}

	mu      sync.Mutex
	problem string              // why this node takes no VMs ("" when it does)
	guarded []hypervisor.Target // the ports the guard keeps the VMs from
}

// New returns a Monitor that has not probed yet: it has no problem until
// Check or Run says otherwise.
func New(cfg Config) *Monitor {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Monitor{cfg: cfg, announce: make(chan struct{}, 1)}
}

// Check probes once and keeps the answer without gossiping it: the peer's
// first report, before gossip starts, is then true.
func (m *Monitor) Check(ctx context.Context) {
	p := m.probe(ctx)
	m.mu.Lock()
	m.problem = p
	m.mu.Unlock()
}

// Problem says why this node takes no VMs ("" when it does).
func (m *Monitor) Problem() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.problem
}

// OK reports whether the node takes VMs: it has a driver and no problem.
func (m *Monitor) OK() bool {
	return m.cfg.Driver != nil && m.Problem() == ""
}

// Run probes every Interval until ctx ends, and gossips the report when the
// problem changes.
func (m *Monitor) Run(ctx context.Context) {
	tick := time.NewTicker(m.cfg.Interval)
	defer tick.Stop()
	for {
		m.set(m.probe(ctx))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// AnnounceSoon has the report gossiped again without waiting for it:
// spreading a report can take seconds.
func (m *Monitor) AnnounceSoon() {
	select {
	case m.announce <- struct{}{}:
	default: // one is due already
	}
}

// RunAnnouncer gossips the report whenever AnnounceSoon asks, until ctx ends.
func (m *Monitor) RunAnnouncer(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.announce:
		}
		if err := m.cfg.Announce(); err != nil {
			m.cfg.Log.Warn("gossip report", "err", err)
		}
	}
}

// probe returns why this node cannot take VMs ("" when it can).
func (m *Monitor) probe(ctx context.Context) string {
	if m.cfg.Driver == nil {
		return NoDriver
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if err := m.cfg.Driver.Probe(ctx); err != nil {
		return "hypervisor does not answer: " + err.Error()
	}
	return m.guard(ctx)
}

// set keeps problem and, when it changed, says so and gossips it.
func (m *Monitor) set(problem string) {
	m.mu.Lock()
	changed := m.problem != problem
	m.problem = problem
	m.mu.Unlock()
	if !changed {
		return
	}
	if problem != "" {
		m.cfg.Log.Error("this node takes no VMs", "why", problem)
	} else {
		m.cfg.Log.Info("hypervisor answers; this node takes VMs")
	}
	if err := m.cfg.Announce(); err != nil {
		m.cfg.Log.Warn("gossip report", "err", err)
	}
}

// guard keeps the guard of this node's VMs in step with the cluster's
// ports, where the driver has one; it returns a problem ("" for none): a
// node whose VMs could reach the cluster's ports takes none.
func (m *Monitor) guard(ctx context.Context) string {
	g, ok := m.cfg.Driver.(hypervisor.GuestGuard)
	if !ok {
		return ""
	}
	targets := m.cfg.Targets()
	m.mu.Lock()
	same := m.guarded != nil && slices.Equal(m.guarded, targets)
	m.mu.Unlock()
	if same {
		return ""
	}
	if err := g.GuardGuests(ctx, targets); err != nil {
		return "cannot keep VMs from the cluster's ports: " + err.Error()
	}
	m.mu.Lock()
	m.guarded = targets
	m.mu.Unlock()
	return ""
}

// Unguard removes the guard of this node's VMs on a clean stop when none of
// them is left: while one runs (VMs outlive their peer's restart) it must
// stay kept from the host's ports.
func (m *Monitor) Unguard() {
	g, ok := m.cfg.Driver.(hypervisor.GuestGuard)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), unguardTimeout)
	defer cancel()
	doms, err := m.cfg.Driver.List(ctx)
	switch {
	case err != nil:
		m.cfg.Log.Warn("the guard of the VMs stays: cannot list them", "err", err)
	case len(doms) > 0:
		m.cfg.Log.Info("the guard of the VMs stays: they run on", "vms", len(doms))
	default:
		if err := g.UnguardGuests(ctx); err != nil {
			m.cfg.Log.Warn("remove the guard of the VMs", "err", err)
		}
	}
}
