package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/node/membership"
	"github.com/svc-project/svc/raftstore"
)

// peersFile remembers the gossip addresses of the other peers, so that a peer
// restarted from its data dir finds the cluster again without --join.
const peersFile = "peers.json"

// ErrJoinTimeout is sent on Err when a new peer could not join in time.
var ErrJoinTimeout = errors.New("could not join the cluster")

// Err delivers a fatal error of the peer's background work (at most one).
func (p *Peer) Err() <-chan error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.errCh == nil {
		p.errCh = make(chan error, 1)
	}
	return p.errCh
}

func (p *Peer) fail(err error) {
	p.mu.Lock()
	if p.errCh == nil {
		p.errCh = make(chan error, 1)
	}
	ch := p.errCh
	p.mu.Unlock()
	select {
	case ch <- err:
	default:
	}
}

// joinLoop contacts the --join addresses and the remembered peers, retrying
// with backoff until one answers or JoinTimeout passes.
func (p *Peer) joinLoop() {
	addrs := append([]string(nil), p.cfg.Join...)
	for _, a := range append(p.seedPeers, p.loadPeers()...) {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	addrs = slices.DeleteFunc(addrs, func(a string) bool { return a == p.gossip.Addr() })
	if len(addrs) == 0 {
		return
	}
	deadline := time.Now().Add(p.cfg.JoinTimeout)
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		n, err := p.gossip.Join(p.ctx, addrs)
		if err == nil {
			p.cfg.Log.Info("joined the cluster", "contacted", n, "attempt", attempt)
			return
		}
		if p.ctx.Err() != nil {
			return
		}
		if time.Now().After(deadline) {
			err = fmt.Errorf("%w after %d attempts over %s: %v", ErrJoinTimeout, attempt, p.cfg.JoinTimeout, err)
			if p.store.HadState() {
				// Raft still works; the leader will reach out to this peer.
				p.cfg.Log.Error("giving up joining gossip; waiting for the leader to reach this peer", "err", err)
				return
			}
			p.cfg.Log.Error("giving up joining", "err", err)
			p.fail(err)
			return
		}
		p.cfg.Log.Warn("join failed, retrying", "addrs", addrs, "attempt", attempt, "err", err)
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// bootstrapLoop starts the Raft group of a cluster this peer formed (its
// Init still pending and no Raft state yet): a group of one, which the
// others join with tokens.
func (p *Peer) bootstrapLoop() {
	if p.store.HadState() {
		return
	}
	if _, pending := membership.PendingInit(p.id.Dir); !pending {
		return
	}
	if p.inConfiguration() {
		return
	}
	if err := p.store.BootstrapCluster([]raftstore.Server{{ID: p.cfg.Name, Address: p.store.Addr(), Voter: true}}); err != nil {
		p.cfg.Log.Error("bootstrap failed", "err", err)
		p.fail(err)
		return
	}
	p.cfg.Log.Info("bootstrapped a new cluster")
}

func (p *Peer) inConfiguration() bool {
	servers, err := p.store.Servers(p.ctx)
	return err == nil && len(servers) > 0
}

// rememberPeersLoop keeps peers.json in step with the live members.
func (p *Peer) rememberPeersLoop() {
	var last []string
	for {
		var addrs []string
		for _, m := range p.gossip.Members() {
			if m.Name != p.cfg.Name && m.State == gossip.StateAlive {
				addrs = append(addrs, m.GossipAddr)
			}
		}
		if len(addrs) > 0 && !slices.Equal(addrs, last) {
			if err := p.savePeers(addrs); err != nil {
				p.cfg.Log.Warn("cannot remember peers", "err", err)
			} else {
				last = addrs
			}
		}
		select {
		case <-p.ctx.Done():
			return
		case <-p.gossip.Changed():
		}
		select { // let a burst of changes settle
		case <-p.ctx.Done():
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (p *Peer) loadPeers() []string {
	b, err := os.ReadFile(filepath.Join(p.cfg.DataDir, peersFile))
	if err != nil {
		return nil
	}
	var addrs []string
	if err := json.Unmarshal(b, &addrs); err != nil {
		p.cfg.Log.Warn("ignoring unreadable peers file", "err", err)
		return nil
	}
	return addrs
}

func (p *Peer) savePeers(addrs []string) error {
	b, err := json.Marshal(addrs)
	if err != nil {
		return fmt.Errorf("encode peers: %w", err)
	}
	tmp := filepath.Join(p.cfg.DataDir, peersFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write peers: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(p.cfg.DataDir, peersFile)); err != nil {
		return fmt.Errorf("write peers: %w", err)
	}
	return nil
}
