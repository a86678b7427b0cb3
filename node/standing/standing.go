package standing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/fabric"
)

// Bounds of a Keeper's questions.
const (
	// checkWait bounds Check; askWait one peer's answer.
	checkWait = 10 * time.Second
	askWait   = 3 * time.Second
	// DefaultEvery is how often a peer that knows no leader asks the
	// others whether it still belongs to the cluster.
	DefaultEvery = 10 * time.Second
	// refreshEvery spaces the trust refreshes.
	refreshEvery = 5 * time.Second
)

// Config is what a Keeper needs.
type Config struct {
	// Name is this peer's.
	Name string
	// Addrs returns the gossip addresses of the peers to ask whether this
	// one still belongs to the cluster.
	Addrs func() []string
	// Ask asks the peer at addr: nil, or an error wrapping
	// fabric.ErrRefused or fabric.ErrOtherCluster (fabric.Identity.Standing).
	Ask func(ctx context.Context, addr string) error
	// LeaderKnown reports whether this peer knows a leader now.
	LeaderKnown func() bool
	// Removed stops the peer the cluster refused.
	Removed func(error)
	// Trust is this peer's trust set; PeerURL says where peer name's API is
	// reached over the fabric ("" when unknown), HTTP calls it.
	Trust   *fabric.Trust
	PeerURL func(name string) string
	HTTP    *http.Client
	// Every is how often Run asks while no leader is known (0: DefaultEvery).
	Every time.Duration
	Log   *slog.Logger
}

// Keeper asks the cluster about this peer's standing and trust.
type Keeper struct {
	cfg     Config
	refresh chan struct{}
}

// New returns a Keeper; Run starts its loops.
func New(cfg Config) *Keeper {
	if cfg.Every <= 0 {
		cfg.Every = DefaultEvery
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{cfg: cfg, refresh: make(chan struct{}, 1)}
}

// Check asks the peers this one knows whether it may come back: a removed
// peer is told so (an error wrapping fabric.ErrRefused). When none answers
// it may (the cluster may be down with it).
func (k *Keeper) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	for _, a := range k.cfg.Addrs() {
		actx, acancel := context.WithTimeout(ctx, askWait)
		err := k.cfg.Ask(actx, a)
		acancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fabric.ErrRefused):
			return fmt.Errorf("the cluster refuses this peer (asked %s): %w", a, err)
		case errors.Is(err, fabric.ErrOtherCluster):
			k.cfg.Log.Warn("a remembered peer address now belongs to another cluster", "addr", a)
		}
	}
	return nil
}

// Run asks about this peer's standing every Every while it knows no leader,
// and refreshes its trust set when asked to, until ctx ends or the cluster
// refuses the peer (Removed is then called).
func (k *Keeper) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before the wait: a refused peer's refresh loop ends too
	wg.Go(func() { k.refreshLoop(ctx) })
	tick := time.NewTicker(k.cfg.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if k.cfg.LeaderKnown() {
			continue
		}
		if err := k.Check(ctx); err != nil {
			k.cfg.Log.Error("stopping", "err", err)
			k.cfg.Removed(err)
			return
		}
	}
}

// RefreshTrustSoon asks for a trust refresh (at most one every few seconds).
func (k *Keeper) RefreshTrustSoon() {
	select {
	case k.refresh <- struct{}{}:
	default:
	}
}

func (k *Keeper) refreshLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.refresh:
		}
		if !k.refreshTrust(ctx) {
			continue // no peer's address known yet (just restarted): the next refusal asks again
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(refreshEvery):
		}
	}
}

// refreshTrust asks the peers this one knows for their trust set and takes
// the first newer one; it reports whether it could ask any.
func (k *Keeper) refreshTrust(ctx context.Context) bool {
	have := k.cfg.Trust.Set()
	asked := false
	for name := range have.Members {
		url := k.cfg.PeerURL(name)
		if name == k.cfg.Name || url == "" {
			continue
		}
		asked = true
		actx, cancel := context.WithTimeout(ctx, askWait)
		var got api.PeerTrust
		err := (&api.Client{BaseURL: url, HTTP: k.cfg.HTTP}).Do(actx, http.MethodGet, api.TrustPath, nil, &got)
		cancel()
		if err != nil || got.Index <= have.Index {
			k.cfg.Log.Debug("asked a peer for the cluster's peers", "peer", name, "index", got.Index, "have", have.Index, "err", err)
			continue
		}
		set := fabric.TrustSet{Index: got.Index, Members: got.Members, Removed: map[string]fabric.Removal{}}
		for kid, r := range got.Removed {
			set.Removed[kid] = fabric.Removal{Name: r.Name, KeyID: kid, At: r.At, By: r.By}
		}
		if ok, err := k.cfg.Trust.Update(set); err != nil {
			k.cfg.Log.Warn("cannot keep the trust set", "err", err)
		} else if ok {
			k.cfg.Log.Info("learned the cluster's peers from a peer", "from", name, "index", got.Index, "peers", len(got.Members))
		}
		return true
	}
	return asked
}
