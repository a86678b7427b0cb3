package gossip

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/svc-project/svc/internal/logbridge"
	"github.com/svc-project/svc/internal/netgate"
)

// State of a member as this peer sees it.
type State string

// Member states.
const (
	StateAlive State = "alive"
	StateDead  State = "dead"
	StateLeft  State = "left"
)

// Member is one peer in the gossip view.
type Member struct {
	Name       string
	GossipAddr string
	Report     Report
	State      State
	// Since is when this peer last saw the member change state.
	Since time.Time
}

// Config configures the gossip layer.
type Config struct {
	Name string
	// Bind is the IP to listen on and advertise.
	Bind string
	// Port is the gossip port (TCP and UDP); 0 picks a free one.
	Port int
	// Local selects memberlist's short loopback timeouts (tests, one host).
	Local bool
	// Gate optionally refuses traffic to some addresses (tests).
	Gate netgate.Gate
	// Report is the first report of this peer.
	Report Report
	// Keys, when set, encrypt and authenticate every packet and stream
	// (memberlist's keyring: incoming and outgoing verified); nil gossips
	// in the clear (benchmarks that state the cost of encryption).
	Keys *Keys
	// Label binds packets and streams to one cluster: a peer drops those
	// of another label.
	Label string
	// Divert receives each incoming stream that opens a TLS handshake (the
	// join service on the gossip port); nil closes them.
	Divert func(net.Conn)
	Log    *slog.Logger
}

// Keys is a gossip keyring: 32-byte keys, and the one that encrypts.
type Keys struct {
	Keys    [][]byte
	Primary int
}

// Gossip is this peer's membership in the gossip pool.
type Gossip struct {
	ml      *memberlist.Memberlist
	keyring *memberlist.Keyring // nil: no encryption
	log     *slog.Logger
	addr    string // fixed at start: memberlist's LocalNode may not be read while it updates
	// updateMu makes SetReport's calls of memberlist's UpdateNode one at
	// a time.
	updateMu sync.Mutex

	mu      sync.Mutex
	report  Report
	members map[string]*Member
	changed chan struct{} // closed and replaced at every change
}

// New starts the gossip layer. The peer is alone until Join succeeds.
func New(cfg Config) (*Gossip, error) {
	lg := cfg.Log
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	g := &Gossip{log: lg, report: cfg.Report, members: map[string]*Member{}, changed: make(chan struct{})}
	mc := memberlist.DefaultLANConfig()
	if cfg.Local {
		// Quick to find a stopped peer, yet not so quick that a busy host
		// (tests under -race beside emulated guests on two cores) takes a
		// late answer for a death: a probe waits 150 ms, and a suspect has
		// three probe rounds to refute before it is declared dead (with a
		// 100 ms probe and two rounds, a peer just restarted was declared
		// dead again mid-copy, and its image copy failed: CI log of 71e3649).
		mc = memberlist.DefaultLocalConfig()
		mc.ProbeInterval = 200 * time.Millisecond
		mc.ProbeTimeout = 150 * time.Millisecond
		mc.GossipInterval = 50 * time.Millisecond
		mc.SuspicionMult = 3
		mc.PushPullInterval = 2 * time.Second
	}
	mc.Name = cfg.Name
	mc.Label = cfg.Label
	if cfg.Keys != nil {
		kr, err := memberlist.NewKeyring(cfg.Keys.Keys, cfg.Keys.Keys[cfg.Keys.Primary])
		if err != nil {
			return nil, fmt.Errorf("gossip keys: %w", err)
		}
		mc.Keyring, g.keyring = kr, kr
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	mc.Delegate = (*delegate)(g)
	mc.Events = (*events)(g)
	mc.DeadNodeReclaimTime = 10 * time.Second
	std := log.New(logbridge.Writer{Log: lg}, "", 0)
	mc.Logger = std
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{cfg.Bind}, BindPort: cfg.Port, Logger: std})
	if err != nil {
		return nil, fmt.Errorf("gossip listen %s:%d: %w", cfg.Bind, cfg.Port, err)
	}
	mc.BindAddr, mc.BindPort = cfg.Bind, nt.GetAutoBindPort()
	mc.AdvertiseAddr, mc.AdvertisePort = cfg.Bind, nt.GetAutoBindPort()
	mc.Transport = newTransport(nt, cfg.Gate, cfg.Divert)
	ml, err := memberlist.Create(mc)
	if err != nil {
		_ = nt.Shutdown()
		return nil, fmt.Errorf("start gossip: %w", err)
	}
	g.ml = ml
	g.addr = net.JoinHostPort(cfg.Bind, strconv.Itoa(nt.GetAutoBindPort()))
	return g, nil
}

// Addr returns the gossip address others join ("ip:port").
func (g *Gossip) Addr() string { return g.addr }

// Join contacts the given gossip addresses once and returns how many answered.
func (g *Gossip) Join(ctx context.Context, addrs []string) (int, error) {
	if len(addrs) == 0 {
		return 0, errors.New("no address to join")
	}
	type result struct {
		n   int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		n, err := g.ml.Join(addrs)
		ch <- result{n, err}
	}()
	select {
	case r := <-ch:
		if r.n > 0 {
			return r.n, nil
		}
		if r.err == nil {
			r.err = errors.New("no peer answered")
		}
		return 0, fmt.Errorf("join %s: %w", strings.Join(addrs, ","), r.err)
	case <-ctx.Done():
		return 0, fmt.Errorf("join %s: %w", strings.Join(addrs, ","), ctx.Err())
	}
}

// SetKeys makes the keyring hold exactly keys, primary encrypting: the new
// keys are added first, then the primary used, then the others removed, so
// that no packet of a peer a step ahead or behind is lost.
func (g *Gossip) SetKeys(k Keys) error {
	if g.keyring == nil {
		return errors.New("gossip runs without encryption")
	}
	if k.Primary < 0 || k.Primary >= len(k.Keys) {
		return errors.New("gossip keys: the primary key is not one of the keys")
	}
	for _, key := range k.Keys {
		if err := g.keyring.AddKey(key); err != nil {
			return fmt.Errorf("gossip keys: %w", err)
		}
	}
	if err := g.keyring.UseKey(k.Keys[k.Primary]); err != nil {
		return fmt.Errorf("gossip keys: %w", err)
	}
	for _, old := range g.keyring.GetKeys() {
		if !slices.ContainsFunc(k.Keys, func(b []byte) bool { return bytes.Equal(b, old) }) {
			if err := g.keyring.RemoveKey(old); err != nil {
				return fmt.Errorf("gossip keys: %w", err)
			}
		}
	}
	return nil
}

// Keys returns the keyring as installed (nil without encryption).
func (g *Gossip) Keys() *Keys {
	if g.keyring == nil {
		return nil
	}
	keys := g.keyring.GetKeys()
	primary := g.keyring.GetPrimaryKey()
	out := &Keys{Keys: keys}
	for i, k := range keys {
		if bytes.Equal(k, primary) {
			out.Primary = i
		}
	}
	return out
}

// SetReport replaces this peer's report and spreads it.
func (g *Gossip) SetReport(r Report) error {
	// memberlist's UpdateNode is not safe to call from two goroutines at
	// once (it writes its own node's state unlocked): the peer's health
	// announcer and its follow loop both report
	g.updateMu.Lock()
	defer g.updateMu.Unlock()
	g.mu.Lock()
	g.report = r
	g.mu.Unlock()
	if err := g.ml.UpdateNode(5 * time.Second); err != nil {
		return fmt.Errorf("spread report: %w", err)
	}
	return nil
}

// Report returns this peer's current report.
func (g *Gossip) Report() Report {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.report
}

// Members returns every member ever seen, sorted by name.
func (g *Gossip) Members() []Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Member, 0, len(g.members))
	for _, m := range g.members {
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Member returns one member.
func (g *Gossip) Member(name string) (Member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.members[name]
	if !ok {
		return Member{}, false
	}
	return *m, true
}

// Changed returns a channel closed at the next membership or report change.
func (g *Gossip) Changed() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

// Leave tells the others this peer is going away for good.
func (g *Gossip) Leave(timeout time.Duration) error {
	if err := g.ml.Leave(timeout); err != nil {
		return fmt.Errorf("leave gossip: %w", err)
	}
	return nil
}

// Shutdown stops gossiping without leaving: the others will see this peer
// die, and see it again when it restarts.
func (g *Gossip) Shutdown() error {
	if err := g.ml.Shutdown(); err != nil {
		return fmt.Errorf("stop gossip: %w", err)
	}
	return nil
}

func (g *Gossip) upsert(n *memberlist.Node, st State) {
	rep, err := decodeReport(n.Meta)
	if err != nil {
		g.log.Warn("bad report from peer", "peer", n.Name, "err", err)
	}
	addr := net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.members[n.Name]
	if !ok {
		m = &Member{Name: n.Name}
		g.members[n.Name] = m
	}
	if !ok || m.State != st {
		m.Since = time.Now()
	}
	m.GossipAddr, m.Report, m.State = addr, rep, st
	close(g.changed)
	g.changed = make(chan struct{})
}

type delegate Gossip

func (d *delegate) NodeMeta(limit int) []byte {
	g := (*Gossip)(d)
	b, err := g.Report().encode(limit)
	if err != nil {
		g.log.Error("cannot gossip report", "err", err)
		return nil
	}
	return b
}

func (d *delegate) NotifyMsg([]byte)                           {}
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

type events Gossip

func (e *events) NotifyJoin(n *memberlist.Node)   { (*Gossip)(e).upsert(n, StateAlive) }
func (e *events) NotifyUpdate(n *memberlist.Node) { (*Gossip)(e).upsert(n, StateAlive) }
func (e *events) NotifyLeave(n *memberlist.Node) {
	st := StateDead
	if n.State == memberlist.StateLeft {
		st = StateLeft
	}
	(*Gossip)(e).upsert(n, st)
}
