package node

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// blobGCLoop removes, every BlobGCInterval and when the blobs' holders
// change, the blobs of this peer that no image, ISO or VM of the cluster
// references and that are older than BlobGCGrace, and those the cluster no
// longer lists here (a cache freed) older than BlobReleaseGrace; and it
// keeps the cluster's record of what this peer holds true.
// It waits until the replica has caught up: a stale replica would take the
// blob of a recent image for an orphan.
func (p *Peer) blobGCLoop() {
	tick := time.NewTicker(p.cfg.BlobGCInterval)
	defer tick.Stop()
	for {
		// A blob's holders changing (a cache freed here) is a reason to
		// look at once.
		changed := p.FSM().Watch(raftfsm.ResourceTopic(raftfsm.ResourceBlob))
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		case <-changed:
		}
		if !p.caught.CaughtUp() {
			continue
		}
		ctx, cancel := context.WithTimeout(p.ctx, time.Minute)
		if err := p.collectBlobs(ctx); err != nil && p.ctx.Err() == nil {
			p.cfg.Log.Warn("collect image blobs", "err", err)
		}
		cancel()
	}
}

// partialMaxAge is how long the partial disk of an interrupted pull is kept
// for a pull of the same disk to resume.
const partialMaxAge = 24 * time.Hour

// collectBlobs runs one collection.
func (p *Peer) collectBlobs(ctx context.Context) error {
	removed, err := p.images.Collect(p.FSM().BlobInUse, p.cfg.BlobGCGrace)
	for _, d := range removed {
		p.cfg.Log.Info("removed an image blob nothing references", "digest", d)
	}
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	released, err := p.images.Collect(p.keepsBlob, p.cfg.BlobReleaseGrace)
	for _, d := range released {
		p.cfg.Log.Info("removed an image blob this node no longer holds (its cache was freed)", "digest", d)
	}
	if err != nil {
		errs = append(errs, err)
	}
	if bc, ok := p.cfg.Driver.(hypervisor.BaseCopies); ok {
		// The hypervisor's own copies of blobs gone from here go too.
		dropped, err := bc.DropBaseCopies(ctx, func(base string) bool { return p.images.Has("sha256:" + base) })
		for _, b := range dropped {
			p.cfg.Log.Info("removed the hypervisor's copy of an image blob this node no longer has", "digest", "sha256:"+b)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	partials, err := p.images.CollectPartials(partialMaxAge)
	for _, d := range partials {
		p.cfg.Log.Info("removed the partial disk of a pull nobody resumed", "digest", d, "after", partialMaxAge)
	}
	if err != nil {
		errs = append(errs, err)
	}
	for _, b := range p.FSM().BlobsHeldBy(p.cfg.Name) {
		if p.images.Has(b.Digest) {
			continue
		}
		_, err := p.Apply(ctx, raftfsm.TypeBlobDropHolder, raftfsm.BlobDropHolder{Digest: b.Digest, Node: p.cfg.Name})
		if err != nil && !errors.Is(err, raftfsm.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// keepsBlob reports whether this node keeps a blob it has: one the state
// does not know yet (on its way to a record), holds here, or that a VM of
// this node uses. A blob the state knows but no longer lists here (a freed
// cache) goes.
func (p *Peer) keepsBlob(digest string) bool {
	b, ok := p.FSM().Blob(digest)
	if !ok || slices.Contains(b.Holders, p.cfg.Name) {
		return true
	}
	for _, vm := range p.FSM().VMsOnNode(p.cfg.Name) {
		if vm.ImageDigest == digest || vm.ISODigest == digest || vm.NVRAMDigest == digest {
			return true
		}
	}
	return false
}
