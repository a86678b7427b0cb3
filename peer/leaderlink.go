package peer

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/node/peerlink"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// leaderLink is the peer's way to its cluster's leader: whether it leads,
// where the leader is, waiting for one, confirming it, and commands
// proposed through it wherever it is (apply.go). Its parts are set as the
// peer starts (Start), the store first.
type leaderLink struct {
	cfg    *Config
	store  *raftstore.Store
	gossip *gossip.Gossip
	// links reach the other peers and know them when they call.
	links *peerlink.Links
	// peerHTTP talks to other peers (blob transfers, applies via the
	// leader) over the fabric: TLS with this peer's certificate.
	peerHTTP *http.Client
	// followed names the leader as the member this peer follows the log
	// through knows it, outside a bounded Raft group (follow.go).
	followed func() string
}

// IsLeader reports whether this peer leads the cluster.
func (p *leaderLink) IsLeader() bool { return p.store.IsLeader() }

// LeaderAPI returns the leader's name and the address peers call it at
// (PeerAddr), empty when unknown.
func (p *leaderLink) LeaderAPI() (string, string) {
	_, id := p.store.Leader()
	if id == "" && p.followed != nil {
		id = p.followed() // outside the Raft group: as the member followed knows it
	}
	if id == "" {
		return "", ""
	}
	return id, p.links.PeerAddr(id)
}

// ErrNoLeader is wrapped when no leader was known within LeaderWait.
var ErrNoLeader = fmt.Errorf("%w: no leader", raftfsm.ErrNotLeader)

// WaitLeader returns the leader's name and the address peers call it at
// (PeerAddr), waiting up to LeaderWait for a leader (and its address) to be
// known. The address is empty when this peer leads.
func (p *leaderLink) WaitLeader(ctx context.Context) (string, string, error) {
	timer := time.NewTimer(p.cfg.LeaderWait)
	defer timer.Stop()
	// a peer that follows the log learns of a leader from its feed, which
	// signals nothing: it looks again every followCheck
	look := time.NewTicker(followCheck)
	defer look.Stop()
	for {
		leaderChanged, gossipChanged := p.store.LeaderChanged(), p.gossip.Changed()
		if p.IsLeader() {
			return p.cfg.Name, "", nil
		}
		if name, addr := p.LeaderAPI(); name != "" && addr != "" {
			return name, addr, nil
		}
		select {
		case <-leaderChanged:
		case <-gossipChanged:
		case <-look.C:
		case <-timer.C:
			return "", "", fmt.Errorf("%w: peer %s cannot reach a quorum of the cluster (waited %s); writes are refused until a leader is elected",
				ErrNoLeader, p.cfg.Name, p.cfg.LeaderWait)
		case <-ctx.Done():
			return "", "", fmt.Errorf("waiting for a leader: %w", ctx.Err())
		}
	}
}

// VerifyLeader confirms leadership with a quorum.
func (p *leaderLink) VerifyLeader(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.LeaderWait)
	defer cancel()
	return p.store.VerifyLeader(ctx)
}

// ClusterInfo describes the cluster as this peer sees it.
func (p *Peer) ClusterInfo(ctx context.Context) api.ClusterInfo {
	leader, _ := p.LeaderAPI()
	info := api.ClusterInfo{
		APIEndpoint: "http://" + p.APIAddr(),
		TLSEndpoint: "https://" + p.TLSAddr(),
		APIDomain:   p.cfg.Bind,
		Version:     p.cfg.Version,
		Level:       raftfsm.Level,
		Leader:      leader,
		Peers:       []api.ClusterPeer{},
	}
	if ok, id := p.FSM().Initialized(); ok {
		info.ClusterID = id
	}
	if c, ok := p.FSM().Cert(); ok {
		info.CertData = c.CertPEM
	}
	if h, ok := p.FSM().Halted(); ok {
		info.Halted = h.Reason
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	servers, err := p.store.Servers(ctx)
	if err != nil {
		p.cfg.Log.Warn("cluster-info: raft configuration", "err", err)
	}
	for _, s := range servers {
		role := api.RaftNonvoter
		switch {
		case s.ID == leader:
			role = api.RaftLeader
		case s.Voter:
			role = api.RaftVoter
		}
		cp := api.ClusterPeer{Name: s.ID, APIAddr: p.links.APIAddr(s.ID), Raft: role}
		if n, ok := p.FSM().Node(s.ID); ok {
			cp.Version, cp.Level = n.Version, max(n.Level, 1)
		}
		info.Peers = append(info.Peers, cp)
	}
	return info
}
