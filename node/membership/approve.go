package membership

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/raftfsm"
)

// A host admitted with a join token that does not approve on its own is
// pending: it has a certificate, replicates the state as a non-voter and
// gossips, but holds no cluster secret, so no signing key, CA key or
// sealed secret opens on it, and it takes no VMs and answers no API call.
// Once an admin approves it (PeerApprove), it fetches the cluster secret
// from another peer over the join service, presenting its certificate.

// Pending says why this peer is not approved yet ("" when it is).
func (m *Membership) Pending() string {
	if m.cfg.Identity.Secret() != nil {
		return ""
	}
	if p, ok := m.cfg.FSM.PeerIdentity(m.cfg.Host.Name); ok && !p.Pending {
		return fmt.Sprintf("peer %s was approved; it is fetching the cluster secret", m.cfg.Host.Name)
	}
	return fmt.Sprintf("peer %s awaits an admin's approval: svc node approve %s", m.cfg.Host.Name, m.cfg.Host.Name)
}

// Approve approves a pending peer (an admin's call).
func (m *Membership) Approve(ctx context.Context, name, by string) (raftfsm.PeerIdentity, error) {
	v, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypePeerApprove, raftfsm.PeerApprove{Name: name, By: by, Time: time.Now().UTC()})
	if err != nil {
		return raftfsm.PeerIdentity{}, err
	}
	p, _ := v.(raftfsm.PeerIdentity)
	if p.Name == "" {
		p, _ = m.cfg.FSM.PeerIdentity(name)
	}
	m.cfg.Log.Info("approved a peer", "peer", name, "by", by)
	return p, nil
}

// Keys answers a peer of the cluster (by its certificate) the gossip
// keyring, and the cluster secret once it is approved.
func (m *Membership) Keys(_ context.Context, certs []*x509.Certificate) (fabric.KeysResponse, error) {
	if len(certs) == 0 {
		return fabric.KeysResponse{}, fabric.Refuse(http.StatusUnauthorized, "no peer certificate")
	}
	name, err := m.cfg.Identity.VerifyPeer(certs, m.cfg.Trust, time.Now())
	if err != nil {
		return fabric.KeysResponse{}, fabric.Refuse(http.StatusForbidden, "%v", err)
	}
	secret := m.cfg.Identity.Secret()
	if secret == nil {
		return fabric.KeysResponse{}, fabric.Refuse(http.StatusServiceUnavailable, "peer %s awaits approval itself; ask another", m.cfg.Host.Name)
	}
	fb, ok := m.cfg.FSM.Fabric()
	if !ok {
		return fabric.KeysResponse{}, errors.New("the cluster is not initialised yet")
	}
	g, err := unwrapGossip(secret, m.cfg.Identity.ClusterID, fb.GossipKeys)
	if err != nil {
		return fabric.KeysResponse{}, err
	}
	out := fabric.KeysResponse{Gossip: g, Epoch: fb.GossipEpoch}
	if p, ok := fb.Peers[name]; ok && !p.Pending {
		out.Secret = secret
		m.cfg.Log.Info("handed the cluster secret to an approved peer", "peer", name)
	}
	return out, nil
}

// fetchKeysSoon has Run fetch this peer's keys.
func (m *Membership) fetchKeysSoon() {
	select {
	case m.fetch <- struct{}{}:
	default:
	}
}

// fetchWait bounds asking one peer for this peer's keys.
const fetchWait = 10 * time.Second

// fetchKeys asks the live approved peers, in turn, for this peer's keys:
// it installs a newer gossip keyring, and keeps the cluster secret once it
// is approved.
func (m *Membership) fetchKeys(ctx context.Context) {
	if m.cfg.Pool == nil {
		return
	}
	for _, mem := range m.cfg.Pool.Members() {
		if mem.State != gossip.StateAlive || mem.Name == m.cfg.Host.Name {
			continue
		}
		if p, ok := m.cfg.FSM.PeerIdentity(mem.Name); !ok || p.Pending {
			continue
		}
		fctx, cancel := context.WithTimeout(ctx, fetchWait)
		keys, err := m.cfg.Identity.FetchKeys(fctx, m.cfg.Dial, mem.GossipAddr)
		cancel()
		if err != nil {
			m.cfg.Log.Warn("could not fetch this peer's keys", "from", mem.Name, "err", err)
			continue
		}
		m.mu.Lock()
		have := m.keyEpoch
		m.mu.Unlock()
		if keys.Epoch > have {
			if err := keys.Gossip.Validate(); err == nil {
				m.installKeys(keys.Gossip, keys.Epoch, have)
			}
		}
		if keys.Secret != nil && m.cfg.Identity.Secret() == nil {
			if err := m.cfg.Identity.SetSecret(keys.Secret); err != nil {
				m.cfg.Log.Error("cannot keep the cluster secret", "err", err)
				return
			}
			m.cfg.Log.Info("approved: this peer holds the cluster secret now", "from", mem.Name)
			if m.cfg.Approved != nil {
				m.cfg.Approved()
			}
		}
		return
	}
}
