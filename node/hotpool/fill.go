package hotpool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// wanted is how many free guests of a shape the node keeps.
type wanted struct {
	shape raftfsm.Shape
	n     int
}

// desired returns the guests the hot configs want of this node, by shape
// key: none while it is cordoned, and only of its namespace's configs
// (the only VMs placed here).
func (p *Pool) desired(node raftfsm.NodeView) map[string]wanted {
	want := map[string]wanted{}
	if node.Cordoned || p.maxMemory(node) <= 0 {
		return want
	}
	total := 0
	for _, cfg := range p.cfg.FSM.HotConfigs() {
		if cfg.Namespace != node.Namespace {
			continue
		}
		sh, ok := p.cfg.FSM.WarmShape(cfg)
		if !ok {
			continue
		}
		n := min(cfg.Hot, raftfsm.MaxHotPerNode-total)
		if n <= 0 {
			break
		}
		total += n
		w := want[sh.Key()]
		w.shape, w.n = sh, w.n+n
		want[sh.Key()] = w
	}
	return want
}

// maxMemory is the memory the node's hot guests may take together.
func (p *Pool) maxMemory(node raftfsm.NodeView) int64 {
	switch {
	case p.cfg.MaxMemory < 0:
		return 0
	case p.cfg.MaxMemory == 0:
		return node.Capacity.MemoryBytes / 8
	}
	return p.cfg.MaxMemory
}

// pass destroys the guests nobody wants (drained, over the memory the
// node can spare, their VM deleted before the hand-over, or left by an
// earlier run), reports the free ones, and restores one guest missing; it
// returns true when it restored one.
func (p *Pool) pass(ctx context.Context) bool {
	if p.cfg.Ready != nil && !p.cfg.Ready.CaughtUp() {
		return false
	}
	node, ok := p.cfg.FSM.Node(p.cfg.Name)
	if !ok {
		return false
	}
	want := p.desired(node)
	claimed := map[string]bool{} // domains of live VMs of this node
	for _, vm := range p.cfg.FSM.VMsOnNode(p.cfg.Name) {
		if vm.Domain != "" {
			claimed[vm.Domain] = true
		}
	}
	spent := map[string]bool{}
	for _, d := range node.HotSpent {
		spent[d] = true
	}
	p.destroy(ctx, p.unwanted(node, want, claimed, spent, p.shortOfDisk(), p.overQuota(node.Namespace)))
	// The hypervisor is listed at the first pass (a restart's leftovers)
	// and then once an Interval: passes come at every node's report.
	if time.Since(p.listed) >= p.cfg.Interval {
		p.listed = time.Now()
		p.destroy(ctx, p.orphans(ctx, claimed))
	}
	free := p.free(spent, claimed)
	p.report(ctx, node, free)
	return p.fillOne(ctx, node, want, free)
}

// unwanted takes out of the pool the guests to destroy: claimed ones whose
// VM is gone, and free ones past their shape's count, the memory the pool
// may hold, or the bytes of disk it must give back (diskShort, of their
// bounds: the disk is past its promises; quotaOver, of their disks: the
// namespace is past its disk quota), the newest first.
func (p *Pool) unwanted(node raftfsm.NodeView, want map[string]wanted, claimed, spent map[string]bool, diskShort, quotaOver int64) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var drop []string
	var free []*guest
	var held int64
	for d, g := range p.ready {
		switch {
		case claimed[d]:
			held += g.memory // its VM takes it over
		case spent[d]:
			drop = append(drop, d) // claimed, and its VM deleted before the hand-over
		default:
			free = append(free, g)
		}
	}
	slices.SortFunc(free, func(a, b *guest) int { return a.readyAt.Compare(b.readyAt) })
	room := min(p.maxMemory(node), node.Capacity.MemoryBytes-node.Used.MemoryBytes) - held
	count := map[string]int{}
	var kept []*guest
	for _, g := range free {
		count[g.key]++
		if count[g.key] > want[g.key].n || g.memory > room {
			drop = append(drop, g.domain)
			continue
		}
		room -= g.memory
		kept = append(kept, g)
	}
	for i := len(kept) - 1; i >= 0 && (diskShort > 0 || quotaOver > 0); i-- {
		drop = append(drop, kept[i].domain)
		diskShort -= kept[i].bound
		quotaOver -= kept[i].disk
		p.metrics.yielded.Inc()
	}
	for _, d := range drop {
		delete(p.ready, d)
		p.going[d] = make(chan struct{})
	}
	return drop
}

// orphans returns the hot domains on the node that are nobody's: not in
// the pool, not being restored or destroyed, and no live VM's.
func (p *Pool) orphans(ctx context.Context, claimed map[string]bool) []string {
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	doms, err := p.cfg.Driver.List(lctx)
	if err != nil {
		p.cfg.Log.Warn("list domains", "err", err)
		return nil
	}
	prefix := hypervisor.HotPrefix(p.cfg.Name)
	p.mu.Lock()
	defer p.mu.Unlock()
	listed := map[string]bool{}
	for _, d := range doms {
		listed[d.Name] = true
	}
	for d := range p.handed {
		if !listed[d] {
			delete(p.handed, d) // its VM is gone, and the host removed its domain
		}
	}
	var out []string
	for _, d := range doms {
		n := d.Name
		if !strings.HasPrefix(n, prefix) || p.ready[n] != nil || p.filling == n || p.handed[n] || claimed[n] || p.going[n] != nil {
			continue
		}
		p.going[n] = make(chan struct{})
		out = append(out, n)
	}
	return out
}

// destroy removes the domains taken out of the pool (p.going).
func (p *Pool) destroy(ctx context.Context, domains []string) {
	for _, d := range domains {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		err := p.cfg.Driver.Delete(dctx, d)
		cancel()
		if err != nil && !errors.Is(err, hypervisor.ErrNotFound) {
			p.cfg.Log.Warn("destroy a hot guest", "domain", d, "err", err)
		} else {
			p.cfg.Log.Info("hot guest destroyed", "domain", d)
		}
		p.mu.Lock()
		close(p.going[d])
		delete(p.going, d)
		p.mu.Unlock()
	}
}

// free returns the pool's free guests, by domain order.
func (p *Pool) free(spent, claimed map[string]bool) []raftfsm.HotGuest {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := []raftfsm.HotGuest{}
	for d, g := range p.ready {
		if !spent[d] && !claimed[d] {
			out = append(out, raftfsm.HotGuest{Key: g.key, Domain: d, ReadyAt: g.readyAt, DiskBytes: g.disk})
		}
	}
	slices.SortFunc(out, func(a, b raftfsm.HotGuest) int { return strings.Compare(a.Domain, b.Domain) })
	return out
}

// report tells the replicated state which guests are free here, when that
// changed.
func (p *Pool) report(ctx context.Context, node raftfsm.NodeView, free []raftfsm.HotGuest) {
	if slices.EqualFunc(node.Hot, free, func(a, b raftfsm.HotGuest) bool { return a.Domain == b.Domain && a.DiskBytes == b.DiskBytes }) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if _, err := p.cfg.Proposer.Apply(rctx, raftfsm.TypeNodeHot, raftfsm.NodeHot{Node: p.cfg.Name, Guests: free}); err != nil && !errors.Is(err, context.Canceled) {
		p.cfg.Log.Warn("report hot guests", "err", err)
	}
}

// fillOne restores one guest of the first shape short of its count that
// the memory allows and whose template the node holds.
func (p *Pool) fillOne(ctx context.Context, node raftfsm.NodeView, want map[string]wanted, free []raftfsm.HotGuest) bool {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	p.mu.Lock()
	var held int64
	for _, g := range p.ready {
		held += g.memory
	}
	recent := time.Since(p.claimed) < p.cfg.RefillDelay
	p.mu.Unlock()
	if recent {
		return false // the claim's kick comes once the delay is over
	}
	for _, k := range keys {
		w := want[k]
		have := 0
		for _, g := range free {
			if g.Key == k {
				have++
			}
		}
		if have >= w.n || !node.HasTemplate(k) {
			continue
		}
		if held+w.shape.MemoryBytes > p.maxMemory(node) || node.Used.MemoryBytes+held+w.shape.MemoryBytes > node.Capacity.MemoryBytes {
			continue // no memory to spare for it now
		}
		if p.backingOff(k) {
			continue
		}
		size, bound := p.cfg.Images.DiskSize(w.shape.ImageDigest, w.shape.ImageFormat)
		if !p.quotaRoom(node.Namespace, size) {
			continue // the namespace's disk quota holds no more
		}
		// Room for its disk, held while it is restored; only the room
		// nothing yields (a guest never pushes another out).
		hold, err := p.cfg.Disk.ReserveSpare("a hot guest of shape "+k, bound, "")
		if err != nil {
			p.cfg.Log.Debug("no room on the disk for a hot guest", "key", k, "err", err)
			continue
		}
		err = p.fill(ctx, k, w.shape, size, bound)
		hold.Release()
		if err != nil {
			if ctx.Err() == nil {
				p.fail(k, err)
			}
			return false // the next change or tick tries again
		}
		p.failed.Forget(k)
		return true
	}
	return false
}

// backingOff reports whether shape key's last fill failed and it waits.
func (p *Pool) backingOff(key string) bool { return p.failed.Waiting(key, time.Now()) }

// fail records a failed fill: the shape waits before its next try (from
// 30 s, doubling to 10 minutes).
func (p *Pool) fail(key string, err error) {
	wait := p.failed.Fail(key, time.Now())
	p.metrics.fills.WithLabelValues("failed").Inc()
	p.cfg.Log.Warn("filling a hot pool failed", "key", key, "retry in", wait, "err", err)
}

// fill restores a guest of shape sh from the node's template, sets it
// apart (no forwards, its screen on a host socket) and makes it its own
// (the identity step, as for a restored VM), within FillTimeout; a guest
// that fails is destroyed. size is its disk's size as it sees it, bound
// what its disk file may take.
func (p *Pool) fill(ctx context.Context, key string, sh raftfsm.Shape, size, bound int64) (err error) {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.FillTimeout)
	defer cancel()
	id := make([]byte, 6)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	pw := make([]byte, 12)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	domain := hypervisor.HotDomain(p.cfg.Name, key, hex.EncodeToString(id))
	spec := hypervisor.Spec{
		Name: domain, CPU: sh.CPU, MemoryMiB: sh.MemoryBytes >> 20, BaseImage: p.cfg.Images.Path(sh.ImageDigest), BaseFormat: sh.ImageFormat,
		LegacyIO: sh.LegacyIO, GuestOS: sh.OS, ListenAddr: p.cfg.Bind, VNCPassword: hex.EncodeToString(pw), Hot: true,
	}
	p.mu.Lock()
	p.filling = domain
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.filling = ""
		p.mu.Unlock()
	}()
	start := time.Now()
	ok, err := p.cfg.Templates.RestoreShape(ctx, key, spec, "hot guest "+domain)
	if err != nil || !ok {
		return errors.Join(err, fmt.Errorf("no usable template of shape %s", key))
	}
	defer func() {
		if err != nil {
			if derr := p.cfg.Driver.Delete(context.WithoutCancel(ctx), domain); derr != nil && !errors.Is(derr, hypervisor.ErrNotFound) {
				p.cfg.Log.Warn("destroy a hot guest that failed", "domain", domain, "err", derr)
			}
		}
	}()
	// Its own machine id, SSH host keys and random seed, before anyone
	// may claim it. The host name is its VM's, given at the claim.
	// An image without a step (or an agent) has none: its guests would
	// share the template's, so it has no hot guests.
	if err := hypervisor.RunIdentityStep(ctx, p.cfg.Driver, domain, "hot-"+hex.EncodeToString(id), hypervisor.IdentityRestore, p.cfg.AgentWait); err != nil {
		return fmt.Errorf("the identity step of hot guest %s: %w", domain, err)
	}
	p.mu.Lock()
	p.ready[domain] = &guest{key: key, domain: domain, memory: sh.MemoryBytes, disk: size, bound: bound, readyAt: time.Now()}
	p.mu.Unlock()
	p.metrics.fills.WithLabelValues("ready").Inc()
	p.metrics.fillSeconds.Observe(time.Since(start).Seconds())
	p.cfg.Log.Info("hot guest ready", "domain", domain, "key", key, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
