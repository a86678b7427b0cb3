package membership

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/raftfsm"
)

// Proposer applies commands through the leader.
type Proposer interface {
	Apply(ctx context.Context, t raftfsm.Type, body any) (any, error)
}

// Pool is the gossip pool as membership uses it.
type Pool interface {
	Members() []gossip.Member
	Changed() <-chan struct{}
	SetKeys(k gossip.Keys) error
}

// Config is what membership is given.
type Config struct {
	Host     Host
	Identity *fabric.Identity
	Trust    *fabric.Trust
	FSM      *raftfsm.FSM
	Proposer Proposer
	// Pool is nil while gossip runs without encryption (benchmarks).
	Pool Pool
	// KeysInstalled is called with the gossip keyring epoch this peer
	// has installed (the peer reports it, so that a rotation knows when
	// every peer holds the new key).
	KeysInstalled func(epoch uint64)
	// Dial reaches other peers' gossip ports (a pending peer fetches its
	// keys there); nil dials plain TCP.
	Dial fabric.DialFunc
	// Approved is called once a pending peer holds the cluster secret.
	Approved func()
	// Sync waits until this replica has what the leader had applied when
	// it was asked (a join token made a moment ago): nil never waits.
	Sync func(ctx context.Context) error
	// RenewEvery is how often the certificate's age is checked (default
	// one minute).
	RenewEvery time.Duration
	Log        *slog.Logger
}

// ErrRemoved is returned by Run when the cluster removed this peer.
var ErrRemoved = errors.New("this peer was removed from the cluster")

// Membership is the peer's part in who belongs to the cluster.
type Membership struct {
	cfg    Config
	dir    string
	rotate chan struct{} // a gossip key rotation is due (a peer was removed)
	fetch  chan struct{} // a pending or newly approved peer's keys are due

	mu          sync.Mutex
	wrappedSeed []byte
	seed        []byte
	keyEpoch    uint64 // of the gossip keyring installed
	trustSeen   uint64 // the state's trust index last looked at
	addrAsked   time.Time
}

// New returns the peer's membership.
func New(cfg Config) *Membership {
	if cfg.RenewEvery <= 0 {
		cfg.RenewEvery = time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Membership{cfg: cfg, dir: cfg.Identity.Dir, rotate: make(chan struct{}, 1), fetch: make(chan struct{}, 1)}
}

// Identity is this peer's.
func (m *Membership) Identity() *fabric.Identity { return m.cfg.Identity }

// Trust is this peer's trust set.
func (m *Membership) Trust() *fabric.Trust { return m.cfg.Trust }

// KeyEpoch is the epoch of the gossip keyring this peer has installed.
func (m *Membership) KeyEpoch() uint64 {
	if m == nil {
		return 0 // a peer reports before its membership is made
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.keyEpoch
}

func (m *Membership) aad() []byte { return []byte(m.cfg.Identity.ClusterID) }

// SigningKey is the cluster's token signing seed, unwrapped (nil before the
// state has it).
func (m *Membership) SigningKey() []byte {
	w := m.cfg.FSM.WrappedSigningKey()
	if len(w) == 0 || m.cfg.Identity.Secret() == nil {
		return nil // pending: no secret to open it with
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if bytes.Equal(w, m.wrappedSeed) {
		return m.seed
	}
	seed, err := fabric.Unwrap(m.cfg.Identity.Secret(), fabric.PurposeSigningKey, w, m.aad())
	if err != nil || len(seed) != ed25519.SeedSize {
		m.cfg.Log.Error("the cluster's signing key does not open with this peer's cluster secret", "err", err)
		return nil
	}
	m.wrappedSeed, m.seed = w, seed
	return seed
}

// SealKey is the key registry passwords are sealed with: derived from the
// cluster secret, which the state never holds.
func (m *Membership) SealKey() []byte {
	secret := m.cfg.Identity.Secret()
	if secret == nil {
		return nil // pending
	}
	k, err := fabric.Derive(secret, fabric.PurposeRegistry)
	if err != nil {
		return nil
	}
	return k
}

// caKey unwraps the CA's key from the state.
func (m *Membership) caKey() (*ecdsa.PrivateKey, error) {
	if m.cfg.Identity.Secret() == nil {
		return nil, fabric.ErrNoSecret
	}
	fb, ok := m.cfg.FSM.Fabric()
	if !ok {
		return nil, errors.New("the cluster is not initialised yet")
	}
	der, err := fabric.Unwrap(m.cfg.Identity.Secret(), fabric.PurposeCAKey, fb.CAKey, m.aad())
	if err != nil {
		return nil, fmt.Errorf("the CA key: %w", err)
	}
	return fabric.ParseKeyDER(der)
}

// trustSet is the state's admitted and removed peers.
func trustSet(fb raftfsm.Fabric) fabric.TrustSet {
	s := fabric.TrustSet{Index: fb.TrustIndex, Members: map[string]string{}, Removed: map[string]fabric.Removal{}}
	for name, p := range fb.Peers {
		s.Members[name] = p.KeyID
	}
	for kid, r := range fb.Removed {
		s.Removed[kid] = fabric.Removal{Name: r.Name, KeyID: kid, At: r.At, By: r.By}
	}
	return s
}

// Run keeps the peer in step with the state until ctx ends: the trust set
// (kept in a file for restarts), the gossip keys, the pending Init's file,
// the peer's addresses, and its certificate's renewal. It returns
// ErrRemoved (wrapped, with why) when the state says this peer was removed.
func (m *Membership) Run(ctx context.Context) error {
	renew := time.NewTicker(m.cfg.RenewEvery)
	defer renew.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	m.renew()
	for {
		changed := m.cfg.FSM.Changed()
		if err := m.sync(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-renew.C:
			m.renew()
		case <-m.rotate:
			wg.Go(func() { m.rotateAfterRemoval(ctx) })
		case <-m.fetch:
			m.fetchKeys(ctx)
		}
	}
}

// rotateAfterRemoval rotates the gossip key after a peer's removal, trying
// again (a few times, with backoff) while a peer does not confirm.
func (m *Membership) rotateAfterRemoval(ctx context.Context) {
	backoff := 5 * time.Second
	for attempt := 1; attempt <= 5; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		err := m.RotateGossipKey(rctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			return
		}
		m.cfg.Log.Warn("gossip key rotation after a removal failed", "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// sync looks at the fabric's versions at every change of the state (cheap)
// and reads the fabric itself only when one moved.
func (m *Membership) sync(ctx context.Context) error {
	trustIdx, epoch, ok := m.cfg.FSM.FabricVersion()
	if !ok {
		return nil
	}
	m.mu.Lock()
	seen, have := m.trustSeen, m.keyEpoch
	m.mu.Unlock()
	if trustIdx != seen || epoch > have {
		fb, _ := m.cfg.FSM.Fabric()
		if r, removed := fb.Removed[m.cfg.Identity.KeyID()]; removed {
			err := &fabric.RemovedError{Removal: fabric.Removal{Name: r.Name, KeyID: r.KeyID, At: r.At, By: r.By}}
			return fmt.Errorf("%w: %w", ErrRemoved, err)
		}
		if fb.TrustIndex > m.cfg.Trust.Index() {
			if _, err := m.cfg.Trust.Update(trustSet(fb)); err != nil {
				m.cfg.Log.Error("cannot keep the trust set", "err", err)
			}
		}
		if seen == 0 {
			_ = os.Remove(filepath.Join(m.dir, fileInit)) // the state has the Init
		}
		m.syncKeys(fb)
		m.mu.Lock()
		m.trustSeen = trustIdx
		m.mu.Unlock()
	}
	if p, ok := m.cfg.FSM.PeerIdentity(m.cfg.Host.Name); ok {
		m.syncAddr(ctx, p)
		if !p.Pending && m.cfg.Identity.Secret() == nil {
			m.fetchKeysSoon() // approved: fetch the cluster secret
		}
	}
	return nil
}

// syncKeys installs a gossip keyring the state has and this peer does not.
func (m *Membership) syncKeys(fb raftfsm.Fabric) {
	m.mu.Lock()
	have := m.keyEpoch
	m.mu.Unlock()
	if fb.GossipEpoch <= have {
		return
	}
	if m.cfg.Identity.Secret() == nil {
		m.fetchKeysSoon() // pending: another peer opens them for it
		return
	}
	g, err := unwrapGossip(m.cfg.Identity.Secret(), m.cfg.Identity.ClusterID, fb.GossipKeys)
	if err != nil {
		m.cfg.Log.Error("the gossip keys do not open with this peer's cluster secret", "err", err)
		return
	}
	m.installKeys(g, fb.GossipEpoch, have)
}

// installKeys installs gossip keyring g of epoch, replacing the one of
// epoch have.
func (m *Membership) installKeys(g fabric.GossipKeys, epoch, have uint64) {
	if m.cfg.Pool != nil {
		if err := m.cfg.Pool.SetKeys(gossip.Keys{Keys: g.Keys, Primary: g.Primary}); err != nil {
			m.cfg.Log.Error("cannot install the gossip keys", "err", err)
			return
		}
	}
	if err := fabric.SaveGossipKeys(m.dir, g); err != nil {
		m.cfg.Log.Error("cannot keep the gossip keys", "err", err)
	}
	m.mu.Lock()
	m.keyEpoch = max(m.keyEpoch, epoch)
	m.mu.Unlock()
	if have != 0 {
		m.cfg.Log.Info("installed the gossip keyring", "epoch", epoch, "keys", len(g.Keys))
	}
	if m.cfg.KeysInstalled != nil {
		m.cfg.KeysInstalled(epoch)
	}
}

// syncAddr records this peer's addresses when they differ from the state's
// (the peer moved): a peer proves it with its certificate.
func (m *Membership) syncAddr(ctx context.Context, p raftfsm.PeerIdentity) {
	h := m.cfg.Host
	if p.Addr == h.Addr && p.RaftAddr == h.RaftAddr {
		return
	}
	m.mu.Lock()
	if time.Since(m.addrAsked) < 5*time.Second {
		m.mu.Unlock()
		return
	}
	m.addrAsked = time.Now()
	m.mu.Unlock()
	go func() {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := m.cfg.Proposer.Apply(actx, raftfsm.TypePeerAddr, raftfsm.PeerAddr{Name: h.Name, Addr: h.Addr, RaftAddr: h.RaftAddr}); err != nil {
			m.cfg.Log.Warn("cannot record this peer's new addresses", "err", err)
		} else {
			m.cfg.Log.Info("recorded this peer's new addresses", "addr", h.Addr, "raft", h.RaftAddr)
		}
	}()
}

// renew signs a new certificate for this peer's key when less than a third
// of the current one's life is left or it lacks the peer's address.
func (m *Membership) renew() {
	id := m.cfg.Identity
	ip := net.ParseIP(m.cfg.Host.Addr)
	now := time.Now()
	if !id.NeedsRenewal(now, []net.IP{ip}) {
		return
	}
	key, err := m.caKey()
	if err != nil {
		m.cfg.Log.Warn("cannot renew this peer's certificate yet", "err", err, "expires", id.Certificate().Leaf.NotAfter)
		return
	}
	der, err := fabric.Issue(id.CA, key, id.Name, []net.IP{ip}, id.Key.Public(), now, fabric.CertLifetime)
	if err == nil {
		err = id.Renew(der)
	}
	if err != nil {
		m.cfg.Log.Error("cannot renew this peer's certificate", "err", err)
		return
	}
	m.cfg.Log.Info("renewed this peer's certificate", "until", id.Certificate().Leaf.NotAfter.UTC().Format(time.RFC3339))
}
