package node

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
)

// Some writes take effect on every peer's own replica: a removed user's or
// service account's tokens stop working on a peer once its replica has
// applied the removal (tokens are checked locally, on every peer). Such a
// write is answered once every live peer has applied it, so that "removed"
// means removed everywhere the caller can reach.

// propagateTimeout bounds the wait for the other peers.
const propagateTimeout = 10 * time.Second

// WaitPeersApplied waits until every other live peer's replica has applied
// index (at most propagateTimeout, or ctx), and returns the peers that did
// not show it in time, sorted. Such a peer is cut off or slow: while it is
// cut off from the leader it serves from a replica without the write; once
// it restarts it serves nothing before it has caught up.
func (p *Peer) WaitPeersApplied(ctx context.Context, index uint64) []string {
	ctx, cancel := context.WithTimeout(ctx, propagateTimeout)
	defer cancel()
	var (
		mu      sync.Mutex
		lagging []string
		wg      sync.WaitGroup
	)
	for _, m := range p.gossip.Members() {
		if m.Name == p.cfg.Name || m.State != gossip.StateAlive {
			continue
		}
		if _, ok := p.FSM().PeerIdentity(m.Name); !ok {
			continue // not a peer of the cluster (removed)
		}
		url := p.links.URL(m.Name)
		if url == "" {
			continue
		}
		wg.Add(1)
		go func(m gossip.Member) {
			defer wg.Done()
			if !p.peerApplied(ctx, url, index) {
				mu.Lock()
				lagging = append(lagging, m.Name)
				mu.Unlock()
			}
		}(m)
	}
	wg.Wait()
	slices.Sort(lagging)
	return lagging
}

// peerApplied polls a peer's applied index until it reaches index (true)
// or ctx ends (false).
func (p *Peer) peerApplied(ctx context.Context, url string, index uint64) bool {
	cl := &api.Client{BaseURL: url, HTTP: p.peerHTTP}
	for {
		var got api.CommitIndex
		if err := cl.Do(ctx, http.MethodGet, api.AppliedIndexPath, nil, &got); err == nil && got.Index >= index {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
}
