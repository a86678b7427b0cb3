package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/hypervisor/libvirt"
	"github.com/svc-project/svc/node/sharedstore"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/peerclaim"
	"github.com/svc-project/svc/testkit/poll"
)

// Options tune a test cluster.
type Options struct {
	// PlainPeers runs the peers without the fabric's TLS (benchmarks that
	// state its cost).
	PlainPeers bool
	// ReapAfter is how long a dead peer stays in the Raft configuration.
	ReapAfter time.Duration
	// Capacity offered by every peer (default 4 CPUs, 8 GiB, 0 GPU).
	Capacity raftfsm.Capacity
	// ProductionTiming uses raft's and memberlist's default (LAN) timeouts
	// instead of the short test ones, e.g. to measure failover as users see it.
	ProductionTiming bool
	// Libvirt runs VMs on the host's real libvirtd instead of fake drivers.
	// Such a cluster names its peers (Prefix) and binds them to addresses
	// of their own (DistinctIPs is implied; Subnet), which it claims for
	// the test (testkit/peerclaim): another test's cluster of the same
	// names would remove its VMs.
	Libvirt bool
	// DistinctIPs gives peer i the address 127.0.1.i, so that peers sharing a
	// host (and a libvirtd) do not share VM ports, with one another or with
	// other tests' peers on 127.0.0.1.
	DistinctIPs bool
	// Prefix names the peers "<prefix>-i" (default "peer") and Subnet puts
	// them at 127.0.<subnet>.i with DistinctIPs (default 1): a second
	// cluster in one test needs both, so that neither removes the other's VMs.
	Prefix string
	Subnet int
	// ChunkMiB is the peers' push chunk size (default 1 MiB: small disks
	// still make many chunks).
	ChunkMiB int
	// MaxJobs is how many jobs each peer runs at once (default: the peers').
	MaxJobs int
	// VMInterval is the peers' reconcile timer (default 200 ms).
	VMInterval time.Duration
	// RegistryAllow is the peers' --registry-allow (default: loopback, where
	// the tests' registries run; an empty, non-nil list allows none).
	RegistryAllow []string
	// LifecycleOnly hands the peers their fake driver with its Driver
	// methods only: a hypervisor with none of the optional roles.
	LifecycleOnly bool
	// GuestAgent gives the fake drivers' guests an agent (FakeAgent).
	GuestAgent bool
	// RunnerPollInterval is the peers' peer.Config.RunnerPollInterval.
	RunnerPollInterval time.Duration
	// GuestPrograms, with GuestAgent, stands in for programs of the
	// guests' image (FakeAgent.Programs).
	GuestPrograms func(ctx context.Context, vm string, argv []string, stdin []byte) ([]byte, int, bool)
	// AuditEntries is the peers' --audit-entries (default theirs).
	AuditEntries int
	// Templates is how many booted templates each peer keeps (default
	// none). With fake drivers a template's guest counts as ready at once.
	Templates int
	// Verbose logs the peers' output to stderr.
	Verbose bool
	// Configure, when set, changes peer i's (0-based) configuration before
	// it first starts.
	Configure func(i int, cfg *peer.Config)
	// ForeignNodes: the state holds nodes of hosts that are no members (a
	// cluster formed from a snapshot): readiness counts the members' only.
	ForeignNodes bool
	// Dir holds the peers' data dirs (default a temporary directory): a
	// small file system of the test's own, say. With Libvirt, QEMU's user
	// must be able to search it.
	Dir string
}

// Cluster is a set of in-process peers on 127.0.0.1.
type Cluster struct {
	tb      testing.TB
	opts    Options
	dir     string
	Members []*Member

	warnings   warnings
	mu         sync.Mutex
	adminToken string
	// pendingJoin has the next peer added join pending (AddPending).
	pendingJoin bool
}

// Member is one peer slot; Peer is nil while it is stopped.
type Member struct {
	Name    string
	DataDir string
	Peer    *peer.Peer
	// Fake is the member's hypervisor (nil with Options.Libvirt); it outlives
	// restarts, as libvirtd would.
	Fake *fake.Driver
	// FakeAgent is Fake's guest agent with Options.GuestAgent.
	FakeAgent *fake.Agent
	// Libvirt is the member's real driver with Options.Libvirt.
	Libvirt *libvirt.Driver
	gate    *gate
	cfg     peer.Config
}

// leaderWait is the production default: with the short timeouts below, a
// machine busy with the whole test suite can take elections longer than 2 s,
// and a write forwarded during one must still find the new leader.
const leaderWait = 5 * time.Second

// Timing returns the short Raft timeouts the test cluster uses. The
// leader's lease is as long as the heartbeat timeout (the most raft
// allows): with half of it, a leader beside the rest of CI stepped down
// after 133 ms without an answer, refusing a write in flight.
func Timing() raftstore.Timing {
	return raftstore.Timing{Heartbeat: 250 * time.Millisecond, Election: 250 * time.Millisecond, LeaderLease: 250 * time.Millisecond, Commit: 5 * time.Millisecond}
}

// New starts n peers, joined into one cluster, and waits for a leader and
// for every node to be READY. The cluster is stopped when the test ends.
func New(tb testing.TB, n int, opts Options) *Cluster {
	tb.Helper()
	if opts.Capacity == (raftfsm.Capacity{}) {
		opts.Capacity = raftfsm.Capacity{CPU: 4, MemoryBytes: 8 << 30}
	}
	if opts.Libvirt {
		if opts.Prefix == "" {
			tb.Fatal("testcluster: a cluster on the shared libvirtd needs peer names of its own (Options.Prefix)")
		}
		opts.DistinctIPs = true
	}
	if opts.Prefix == "" {
		opts.Prefix = "peer"
	}
	if opts.Subnet == 0 {
		opts.Subnet = 1
	}
	if opts.ChunkMiB == 0 {
		opts.ChunkMiB = 1
	}
	if opts.VMInterval == 0 {
		opts.VMInterval = 200 * time.Millisecond
	}
	if opts.RegistryAllow == nil {
		opts.RegistryAllow = []string{"127.0.0.0/8"}
	}
	c := &Cluster{tb: tb, opts: opts, dir: opts.Dir}
	switch {
	case c.dir != "":
	case opts.Libvirt:
		c.dir = guest.TempDir(tb) // QEMU's user reaches the data dirs
	default:
		c.dir = tb.TempDir()
	}
	tb.Cleanup(c.Close)
	tb.Cleanup(c.showWarnings) // before Close: a stopping peer's words are no clue
	for range n {
		c.addMember()
	}
	c.WaitLeader()
	c.WaitFor("every node READY", 30*time.Second, func() error { return c.allReady() })
	for _, m := range c.Members {
		c.WaitCaughtUp(m)
	}
	// The admin token is made while the cluster is whole: tests cut it up later.
	c.adminToken = c.Token("admin", true)
	return c
}

// addMember starts the next peer: the first forms the cluster, the others
// join it with a token, as hosts do.
func (c *Cluster) addMember() *Member {
	tb, opts, i := c.tb, c.opts, len(c.Members)
	name := fmt.Sprintf("%s-%d", opts.Prefix, i+1)
	m := &Member{Name: name, DataDir: filepath.Join(c.dir, name), gate: &gate{}}
	bind := "127.0.0.1"
	if opts.DistinctIPs {
		bind = fmt.Sprintf("127.0.%d.%d", opts.Subnet, i+1)
	}
	var drv hypervisor.Driver
	if opts.Libvirt {
		peerclaim.For(tb, peerclaim.Peer(name), peerclaim.Addr(bind))
		lv, err := libvirt.New(libvirt.Config{Dir: peer.VMDir(m.DataDir), ImageDir: peer.ImageDir(m.DataDir), Prefix: hypervisor.DomainPrefix(name)})
		if err != nil {
			tb.Fatal(err)
		}
		m.Libvirt, drv = lv, lv
	} else {
		m.Fake = fake.New(hypervisor.DomainPrefix(name))
		if err := os.MkdirAll(peer.VMDir(m.DataDir), 0o700); err != nil {
			tb.Fatal(err)
		}
		m.Fake.SetMemoryDir(peer.VMDir(m.DataDir))
		drv = m.Fake
		if opts.LifecycleOnly {
			drv = struct{ hypervisor.Driver }{m.Fake}
		}
		if opts.GuestAgent {
			fa := fake.NewAgent(m.Fake)
			fa.Programs = opts.GuestPrograms
			m.FakeAgent, drv = fa, fa
		}
	}
	m.cfg = peer.Config{
		Name: name, DataDir: m.DataDir, Bind: bind,
		Capacity: opts.Capacity, Version: "test", Local: true, RaftTiming: Timing(),
		ReconcileInterval: 200 * time.Millisecond, ReapAfter: opts.ReapAfter,
		NotReadyGrace: 2 * time.Second, JoinTimeout: 30 * time.Second, LeaderWait: leaderWait,
		Gate: m.gate, Log: c.logger(), Driver: drv,
		VMInterval: opts.VMInterval, HealthInterval: 100 * time.Millisecond,
		BlobGCInterval: 200 * time.Millisecond, BlobReleaseGrace: time.Second, ChunkMiB: opts.ChunkMiB, MaxJobs: opts.MaxJobs,
		RegistryAllow: opts.RegistryAllow, Templates: opts.Templates, AuditEntries: opts.AuditEntries,
		PlainPeers: opts.PlainPeers, RunnerPollInterval: opts.RunnerPollInterval,
	}
	if !opts.Libvirt {
		m.cfg.TemplateGuestReady = func(context.Context, string) error { return nil } // a fake guest has nothing to wait for
	}
	if opts.ProductionTiming {
		m.cfg.RaftTiming, m.cfg.Local = raftstore.Timing{}, false
	}
	if opts.Configure != nil {
		opts.Configure(i, &m.cfg)
	}
	// Ports held for the whole test, outside the kernel's ephemeral range:
	// a restarted peer comes back on ports no connection took meanwhile.
	for _, p := range []*int{&m.cfg.APIPort, &m.cfg.TLSPort, &m.cfg.RaftPort, &m.cfg.GossipPort} {
		if *p == 0 {
			*p = guest.FreePort(tb, m.cfg.Bind)
		}
	}
	if i == 0 {
		m.cfg.BootstrapExpect = 1
	} else {
		for _, r := range c.Running() {
			m.cfg.Join = append(m.cfg.Join, r.Peer.GossipAddr())
		}
		m.cfg.JoinToken = c.joinToken(c.pendingJoin)
	}
	c.Members = append(c.Members, m)
	c.start(m)
	return m
}

// AddPending starts one more peer, joined with a token that does not
// approve it, and waits until the cluster admitted it (pending).
func (c *Cluster) AddPending() *Member {
	c.tb.Helper()
	c.pendingJoin = true
	m := c.addMember()
	c.pendingJoin = false
	c.WaitFor(m.Name+" admitted", 30*time.Second, func() error {
		for _, r := range c.Running() {
			if p, ok := r.Peer.FSM().PeerIdentity(m.Name); !ok || !p.Pending {
				return fmt.Errorf("%s does not see %s pending", r.Name, m.Name)
			}
		}
		return nil
	})
	return m
}

// Add starts one more peer, joined with a token, and waits until its node
// is READY and its replica caught up.
func (c *Cluster) Add() *Member {
	c.tb.Helper()
	m := c.addMember()
	c.WaitFor(m.Name+" READY", 30*time.Second, func() error {
		for _, r := range c.Running() {
			if NodePhase(r, m.Name) != api.PhaseReady {
				return fmt.Errorf("%s sees %s %q", r.Name, m.Name, NodePhase(r, m.Name))
			}
		}
		return nil
	})
	c.WaitCaughtUp(m)
	return m
}

// JoinToken makes a join token of the cluster for one host, approved at
// once, through a running peer (as an admin would with 'svc cluster
// join-token create --auto-approve').
func (c *Cluster) JoinToken() string {
	c.tb.Helper()
	return c.joinToken(false)
}

// joinToken makes a join token for one host; with pending, the host waits
// for an admin's approval.
func (c *Cluster) joinToken(pending bool) string {
	c.tb.Helper()
	var tok string
	c.WaitFor("a join token", 20*time.Second, func() error {
		for _, m := range c.Running() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			t, _, err := m.Peer.Membership().CreateJoinToken(ctx, time.Hour, 1, !pending, "test")
			cancel()
			if err == nil {
				tok = t
				return nil
			}
		}
		return fmt.Errorf("no running peer made a join token")
	})
	return tok
}

func (c *Cluster) start(m *Member) {
	c.tb.Helper()
	p, err := peer.Start(m.cfg)
	if err != nil {
		c.tb.Fatalf("start %s: %v", m.Name, err)
	}
	m.Peer = p
}

// Close stops every running peer and, with real libvirt, removes the
// peers' domains; then it unmounts the shared folders a peer stopped with
// a guest using them left mounted.
func (c *Cluster) Close() {
	for _, m := range c.Members {
		if m.Peer != nil {
			_ = m.Peer.Close()
			m.Peer = nil
		}
		if m.Libvirt != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if doms, err := m.Libvirt.List(ctx); err == nil {
				for _, d := range doms {
					_ = m.Libvirt.Delete(ctx, d.Name)
				}
			}
			_ = m.Libvirt.UnguardGuests(ctx) // the guard a stopped peer left its running VMs
			cancel()
			_ = m.Libvirt.Close()
		}
		if err := sharedstore.New(sharedstore.Config{Dir: peer.SharedDir(m.DataDir)}).Release(); err != nil {
			c.tb.Logf("release %s's shared folders: %v", m.Name, err)
		}
	}
}

// Config is the configuration m last started with (a test may start it
// itself, e.g. to see a start refused).
func (m *Member) Config() peer.Config { return m.cfg }

// Stop stops a peer without leaving the cluster (as a crash or restart would).
func (c *Cluster) Stop(m *Member) {
	c.tb.Helper()
	if m.Peer == nil {
		return
	}
	if err := m.Peer.Close(); err != nil {
		c.tb.Logf("stop %s: %v", m.Name, err)
	}
	m.Peer = nil
}

// Crash stops a peer as a crash would: no hand-over of leadership and no
// snapshot, so that on restart its replica holds only what its snapshots had
// (none here: they are removed) until the leader brings it up to date.
func (c *Cluster) Crash(m *Member) {
	c.tb.Helper()
	if m.Peer == nil {
		return
	}
	if err := m.Peer.Halt(); err != nil {
		c.tb.Logf("halt %s: %v", m.Name, err)
	}
	m.Peer = nil
	snaps := filepath.Join(m.DataDir, "raft", "snapshots")
	if err := os.RemoveAll(snaps); err != nil {
		c.tb.Fatal(err)
	}
}

// Restart starts a stopped peer again from its data dir, at its old addresses.
func (c *Cluster) Restart(m *Member) {
	c.tb.Helper()
	cfg := m.cfg
	cfg.Join, cfg.BootstrapExpect, cfg.JoinToken = nil, 0, "" // it must find the cluster from its data dir
	m.cfg = cfg
	c.start(m)
}

// RestartWith starts a stopped peer again from its data dir, at its old
// addresses, with its configuration changed by change first (svc agent
// --recover, say). It returns Start's error instead of failing the test.
func (c *Cluster) RestartWith(m *Member, change func(*peer.Config)) error {
	c.tb.Helper()
	cfg := m.cfg
	cfg.Join, cfg.BootstrapExpect, cfg.JoinToken = nil, 0, ""
	change(&cfg)
	p, err := peer.Start(cfg)
	if err != nil {
		return err
	}
	m.cfg, m.Peer = cfg, p
	return nil
}

// WaitCaughtUp waits until m's replica has caught up with the cluster since
// its start (it serves authenticated calls from then on).
func (c *Cluster) WaitCaughtUp(m *Member) {
	c.tb.Helper()
	c.WaitFor(m.Name+" caught up", 30*time.Second, func() error {
		if !m.Peer.Readiness().CaughtUp() {
			return fmt.Errorf("%s has not caught up", m.Name)
		}
		return nil
	})
}

// Running returns the running members.
func (c *Cluster) Running() []*Member {
	var out []*Member
	for _, m := range c.Members {
		if m.Peer != nil {
			out = append(out, m)
		}
	}
	return out
}

// Leader returns the running member that leads, or nil.
func (c *Cluster) Leader() *Member {
	for _, m := range c.Running() {
		if m.Peer.IsLeader() {
			return m
		}
	}
	return nil
}

// WaitLeader waits for a leader among the running peers that the others agree on.
func (c *Cluster) WaitLeader() *Member {
	c.tb.Helper()
	var l *Member
	c.WaitFor("a leader", 30*time.Second, func() error {
		l = c.Leader()
		if l == nil {
			return fmt.Errorf("no leader")
		}
		return nil
	})
	return l
}

// Followers returns the running members that do not lead.
func (c *Cluster) Followers() []*Member {
	var out []*Member
	for _, m := range c.Running() {
		if !m.Peer.IsLeader() {
			out = append(out, m)
		}
	}
	return out
}

// Client returns an API client of a member acting as the cluster's admin.
func (c *Cluster) Client(m *Member) *api.Client {
	c.mu.Lock()
	tok := c.adminToken
	c.mu.Unlock()
	if tok == "" {
		tok = c.Token("admin", true)
		c.mu.Lock()
		c.adminToken = tok
		c.mu.Unlock()
	}
	return api.NewClient("http://"+m.Peer.APIAddr(), tok)
}

// Token mints a personal token for user (recording the user), as root on a
// peer's host would with 'svc admin token'.
func (c *Cluster) Token(user string, admin bool) string {
	c.tb.Helper()
	var tok string
	c.WaitFor("a token for "+user, 20*time.Second, func() error {
		running := c.Running()
		if len(running) == 0 {
			return fmt.Errorf("no peer runs")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t, _, err := running[0].Peer.HostAdmin().MintToken(ctx, user, admin, time.Hour)
		tok = t
		return err
	})
	// Every running replica knows the user before its token is used anywhere.
	c.WaitFor(user+" known on every peer", 10*time.Second, func() error {
		for _, m := range c.Running() {
			if u, ok := m.Peer.FSM().User(user); !ok || u.Admin != admin {
				return fmt.Errorf("%s does not know %s yet", m.Name, user)
			}
		}
		return nil
	})
	return tok
}

// WaitFor polls cond until it returns nil or the timeout passes (poll.For).
func (c *Cluster) WaitFor(what string, timeout time.Duration, cond func() error) {
	c.tb.Helper()
	poll.For(c.tb, what, timeout, cond)
}

func (c *Cluster) allReady() error {
	for _, r := range c.Running() {
		nodes := r.Peer.FSM().Nodes()
		if c.opts.ForeignNodes {
			nodes = slices.DeleteFunc(nodes, func(n raftfsm.NodeView) bool {
				return !slices.ContainsFunc(c.Members, func(m *Member) bool { return m.Name == n.Name })
			})
		}
		if len(nodes) != len(c.Members) {
			return fmt.Errorf("%s knows %d nodes", r.Name, len(nodes))
		}
		for _, n := range nodes {
			if !n.Ready() {
				return fmt.Errorf("%s sees %s %s", r.Name, n.Name, n.Phase)
			}
		}
	}
	return nil
}

// NodePhase returns the phase of node name as member m's replica has it.
func NodePhase(m *Member, name string) string {
	n, ok := m.Peer.FSM().Node(name)
	if !ok {
		return ""
	}
	return n.Phase
}
