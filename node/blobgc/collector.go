package blobgc

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/raftfsm"
)

// PartialMaxAge is how long the partial disk of an interrupted pull is kept
// for a pull of the same disk to resume.
const PartialMaxAge = 24 * time.Hour

// collectTimeout bounds one collection.
const collectTimeout = time.Minute

// Proposer proposes commands (through the leader).
type Proposer interface {
	Apply(ctx context.Context, t raftfsm.Type, body any) (any, error)
}

// Readiness says whether the replica has caught up since the start.
type Readiness interface {
	CaughtUp() bool
}

// Config configures a Collector.
type Config struct {
	// Name is this node's.
	Name     string
	FSM      *raftfsm.FSM
	Images   *imagestore.Store
	Driver   hypervisor.Driver
	Proposer Proposer
	Ready    Readiness
	// Interval is how often it collects (and whenever blobs' holders change).
	Interval time.Duration
	// Grace is how old an unreferenced blob must be to go; ReleaseGrace
	// how old a blob the cluster no longer lists here.
	Grace, ReleaseGrace time.Duration
	Log                 *slog.Logger
}

// Collector is a peer's blob collection.
type Collector struct{ cfg Config }

// New returns a Collector.
func New(cfg Config) *Collector {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Collector{cfg: cfg}
}

// Run collects every Interval and when the blobs' holders change, once the
// replica has caught up, until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	tick := time.NewTicker(c.cfg.Interval)
	defer tick.Stop()
	for {
		// A blob's holders changing (a cache freed here) is a reason to
		// look at once.
		changed := c.cfg.FSM.Watch(raftfsm.ResourceTopic(raftfsm.ResourceBlob))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-changed:
		}
		if !c.cfg.Ready.CaughtUp() {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, collectTimeout)
		if err := c.Collect(cctx); err != nil && ctx.Err() == nil {
			c.cfg.Log.Warn("collect image blobs", "err", err)
		}
		cancel()
	}
}

// Collect runs one collection.
func (c *Collector) Collect(ctx context.Context) error {
	images, f := c.cfg.Images, c.cfg.FSM
	var errs []error
	removed, err := images.Collect(f.BlobInUse, c.cfg.Grace)
	for _, d := range removed {
		c.cfg.Log.Info("removed an image blob nothing references", "digest", d)
	}
	errs = append(errs, err)
	released, err := images.Collect(c.keeps, c.cfg.ReleaseGrace)
	for _, d := range released {
		c.cfg.Log.Info("removed an image blob this node no longer holds (its cache was freed)", "digest", d)
	}
	errs = append(errs, err)
	if bc, ok := c.cfg.Driver.(hypervisor.BaseCopies); ok {
		// The hypervisor's own copies of blobs gone from here go too.
		dropped, err := bc.DropBaseCopies(ctx, func(base string) bool { return images.Has("sha256:" + base) })
		for _, b := range dropped {
			c.cfg.Log.Info("removed the hypervisor's copy of an image blob this node no longer has", "digest", "sha256:"+b)
		}
		errs = append(errs, err)
	}
	partials, err := images.CollectPartials(PartialMaxAge)
	for _, d := range partials {
		c.cfg.Log.Info("removed the partial disk of a pull nobody resumed", "digest", d, "after", PartialMaxAge)
	}
	errs = append(errs, err)
	for _, b := range f.BlobsHeldBy(c.cfg.Name) {
		if images.Has(b.Digest) {
			continue
		}
		_, err := c.cfg.Proposer.Apply(ctx, raftfsm.TypeBlobDropHolder, raftfsm.BlobDropHolder{Digest: b.Digest, Node: c.cfg.Name})
		if !errors.Is(err, raftfsm.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// keeps reports whether this node keeps a blob it has: one the state does
// not know yet (on its way to a record), holds here, or that a VM of this
// node uses. A blob the state knows but no longer lists here (a freed
// cache) goes.
func (c *Collector) keeps(digest string) bool {
	b, ok := c.cfg.FSM.Blob(digest)
	if !ok || slices.Contains(b.Holders, c.cfg.Name) {
		return true
	}
	for _, vm := range c.cfg.FSM.VMsOnNode(c.cfg.Name) {
		if vm.ImageDigest == digest || vm.ISODigest == digest || vm.NVRAMDigest == digest {
			return true
		}
	}
	return false
}
