package hotpool

import (
	"context"
	"slices"

	"github.com/svc-project/svc/node/diskbudget"
)

// A pooled guest writes its disk as any guest does, up to the size it sees:
// the node holds that room for it in its disk budget (held while it is
// restored, then counted by diskGrowth), and the pool gives it back to any
// work that needs it (Yield), as it shrinks when the disk is past its
// promises or the namespace past its disk quota (unwanted).

// diskPather is a driver that keeps each domain's disk in one file here.
type diskPather interface {
	DiskPath(name string) string
}

// diskGrowth is how much more the pooled guests' disks may take: each
// one's bound less what its file holds now (diskbudget.Grower).
func (p *Pool) diskGrowth() int64 {
	if p.disks == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for d, g := range p.ready {
		n += max(0, g.bound-diskbudget.Allocated(p.disks.DiskPath(d)))
	}
	return n
}

// Yieldable is what destroying the free guests would give back: each one's
// whole bound, promised or written (diskbudget.Yielder).
func (p *Pool) Yieldable() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, g := range p.ready {
		n += g.bound
	}
	return n
}

// Yield destroys free guests, the newest first, until their bounds cover
// need or none is left, and returns what they held (diskbudget.Yielder).
// Guests a VM has claimed are not the pool's to give.
func (p *Pool) Yield(ctx context.Context, need int64) int64 {
	claimed := p.claimedDomains()
	p.mu.Lock()
	free := make([]*guest, 0, len(p.ready))
	for d, g := range p.ready {
		if !claimed[d] {
			free = append(free, g)
		}
	}
	slices.SortFunc(free, func(a, b *guest) int { return b.readyAt.Compare(a.readyAt) })
	var gave int64
	var drop []string
	for _, g := range free {
		if gave >= need {
			break
		}
		gave += g.bound
		drop = append(drop, g.domain)
		delete(p.ready, g.domain)
		p.going[g.domain] = make(chan struct{})
	}
	p.mu.Unlock()
	if len(drop) == 0 {
		return 0
	}
	p.cfg.Log.Info("hot guests give their disk back to work that needs it", "guests", len(drop), "bytes", gave)
	p.metrics.yielded.Add(float64(len(drop)))
	p.destroy(ctx, drop)
	p.kick() // report the pool without them
	return gave
}

// claimedDomains are the domains of this node's VMs.
func (p *Pool) claimedDomains() map[string]bool {
	claimed := map[string]bool{}
	for _, vm := range p.cfg.FSM.VMsOnNode(p.cfg.Name) {
		if vm.Domain != "" {
			claimed[vm.Domain] = true
		}
	}
	return claimed
}

// shortOfDisk is how many bytes of pooled guests the node should give up
// now: what its disk is past its promises.
func (p *Pool) shortOfDisk() int64 {
	if p.cfg.Disk == nil {
		return 0
	}
	r, err := p.cfg.Disk.Room()
	if err != nil {
		return 0
	}
	return max(0, -r.Room)
}

// overQuota is how far the namespace ns is over its disk quota with its
// pooled guests counted (0 with no disk quota).
func (p *Pool) overQuota(ns string) int64 {
	n, ok := p.cfg.FSM.Namespace(ns)
	if !ok || n.Quota == nil || n.Quota.DiskBytes == 0 {
		return 0
	}
	return max(0, p.cfg.FSM.QuotaUse(ns).DiskBytes-n.Quota.DiskBytes)
}

// quotaRoom says whether one more guest of disk bytes fits the disk quota
// of namespace ns.
func (p *Pool) quotaRoom(ns string, disk int64) bool {
	n, ok := p.cfg.FSM.Namespace(ns)
	if !ok || n.Quota == nil || n.Quota.DiskBytes == 0 {
		return true
	}
	return p.cfg.FSM.QuotaUse(ns).DiskBytes+disk <= n.Quota.DiskBytes
}
