package propagate

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
)

// DefaultTimeout bounds the wait for the other peers when Config has none.
const DefaultTimeout = 10 * time.Second

// pollEvery is how often a peer's applied index is asked again.
const pollEvery = 5 * time.Millisecond

// Config is what a Waiter asks peers through.
type Config struct {
	// Self is this peer's name: it is not waited for.
	Self string
	// Members are the peers gossip knows, with their liveness.
	Members func() []gossip.Member
	// InCluster reports whether a member is a peer of the cluster (a removed
	// one still gossips for a while).
	InCluster func(name string) bool
	// URL is a peer's base URL over the fabric, "" when unknown.
	URL func(name string) string
	// HTTP calls the peers (the fabric's client certificate).
	HTTP *http.Client
	// Timeout bounds a whole wait (DefaultTimeout when zero).
	Timeout time.Duration
}

// Waiter waits for the other live peers' replicas.
type Waiter struct{ cfg Config }

// New returns a Waiter asking through cfg.
func New(cfg Config) *Waiter {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Waiter{cfg: cfg}
}

// WaitPeersApplied waits until every other live peer of the cluster shows
// index applied (at most the Timeout, or ctx), and returns the peers that
// did not in time, sorted. Such a peer is cut off or slow: while it is cut
// off from the leader it serves from a replica without the write; once it
// restarts it serves nothing before it has caught up.
func (w *Waiter) WaitPeersApplied(ctx context.Context, index uint64) []string {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	var (
		mu      sync.Mutex
		lagging []string
		wg      sync.WaitGroup
	)
	for _, m := range w.cfg.Members() {
		if m.Name == w.cfg.Self || m.State != gossip.StateAlive || !w.cfg.InCluster(m.Name) {
			continue
		}
		url := w.cfg.URL(m.Name)
		if url == "" {
			continue
		}
		wg.Go(func() {
			if !w.applied(ctx, url, index) {
				mu.Lock()
				lagging = append(lagging, m.Name)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(lagging)
	return lagging
}

// applied polls a peer's applied index until it reaches index (true) or
// ctx ends (false).
func (w *Waiter) applied(ctx context.Context, url string, index uint64) bool {
	cl := &api.Client{BaseURL: url, HTTP: w.cfg.HTTP}
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		var got api.CommitIndex
		if err := cl.Do(ctx, http.MethodGet, api.AppliedIndexPath, nil, &got); err == nil && got.Index >= index {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
}
