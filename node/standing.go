package node

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/fabric"
)

// standingWait bounds the restart's question to the cluster.
const standingWait = 10 * time.Second

// checkStanding asks the peers this one knows whether it may come back: a
// removed peer is told so, and does not start. When none answers, it
// starts (the cluster may be down with it).
func (p *Peer) checkStanding() error {
	addrs := slices.Clone(p.cfg.Join)
	for _, a := range p.loadPeers() {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if p.gossip != nil {
		for _, m := range p.gossip.Members() {
			if m.Name != p.cfg.Name && !slices.Contains(addrs, m.GossipAddr) {
				addrs = append(addrs, m.GossipAddr)
			}
		}
	}
	ctx, cancel := context.WithTimeout(p.ctx, standingWait)
	defer cancel()
	for _, a := range addrs {
		actx, acancel := context.WithTimeout(ctx, 3*time.Second)
		err := p.id.Standing(actx, p.dialer(), a)
		acancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fabric.ErrRefused):
			return fmt.Errorf("the cluster refuses this peer (asked %s): %w", a, err)
		case errors.Is(err, fabric.ErrOtherCluster):
			p.cfg.Log.Warn("a remembered peer address now belongs to another cluster", "addr", a)
		}
	}
	return nil
}

// standingEvery is how often a peer that knows no leader asks the others
// whether it still belongs to the cluster.
const standingEvery = 10 * time.Second

// standingLoop stops a peer the cluster removed while it ran: the leader
// drops its connections at once, so its replica may never apply its own
// removal; once it knows no leader it asks the others, who say why.
func (p *Peer) standingLoop() {
	tick := time.NewTicker(standingEvery)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		if name, _ := p.LeaderAPI(); name != "" {
			continue
		}
		if err := p.checkStanding(); err != nil {
			p.cfg.Log.Error("stopping", "err", err)
			p.fail(err)
			return
		}
	}
}

// refreshTrustSoon asks the trust refresh to run (at most every
// trustRefreshEvery).
func (p *Peer) refreshTrustSoon() {
	select {
	case p.trustRefresh <- struct{}{}:
	default:
	}
}

// trustRefreshEvery spaces the asks of trustRefreshLoop.
const trustRefreshEvery = 5 * time.Second

// trustRefreshLoop learns of peers admitted while this one was down: when a
// certificate of the cluster's CA names a peer this peer does not know, it
// asks the peers it knows for their trust set and takes a newer one. (Its
// replica would tell it, but the leader may be one of those new peers,
// whose connections it refuses.)
func (p *Peer) trustRefreshLoop() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.trustRefresh:
		}
		if !p.refreshTrust() {
			continue // no peer's address known yet (just restarted): the next refusal asks again
		}
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(trustRefreshEvery):
		}
	}
}

// refreshTrust asks the peers this one knows for their trust set and takes
// the first newer one; it reports whether it could ask any.
func (p *Peer) refreshTrust() bool {
	have := p.trust.Set()
	asked := false
	for name := range have.Members {
		url := p.peerURL(name)
		if name == p.cfg.Name || url == "" {
			continue
		}
		asked = true
		ctx, cancel := context.WithTimeout(p.ctx, 3*time.Second)
		var got api.PeerTrust
		err := (&api.Client{BaseURL: url, HTTP: p.peerHTTP}).Do(ctx, http.MethodGet, api.TrustPath, nil, &got)
		cancel()
		if err != nil || got.Index <= have.Index {
			p.cfg.Log.Debug("asked a peer for the cluster's peers", "peer", name, "index", got.Index, "have", have.Index, "err", err)
			continue
		}
		set := fabric.TrustSet{Index: got.Index, Members: got.Members, Removed: map[string]fabric.Removal{}}
		for kid, r := range got.Removed {
			set.Removed[kid] = fabric.Removal{Name: r.Name, KeyID: kid, At: r.At, By: r.By}
		}
		if ok, err := p.trust.Update(set); err != nil {
			p.cfg.Log.Warn("cannot keep the trust set", "err", err)
		} else if ok {
			p.cfg.Log.Info("learned the cluster's peers from a peer", "from", name, "index", got.Index, "peers", len(got.Members))
		}
		return true
	}
	return asked
}
