package host

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// workerStopWait bounds the wait for a worker to stop before its domain is
// removed.
const workerStopWait = 30 * time.Second

// Run keeps this node's domains in step with the VMs the replicated state
// places here, in both directions, until ctx ends; then it stops every
// worker and waits for the removals under way. A pass (at every change of a
// VM placed here, not for other nodes' VMs or jobs, and at least every
// Interval, so that it also corrects what changed behind its back) lists
// the domains, removes those no VM wants, and hands every wanted VM's
// domain state to that VM's worker. A worker converges its VM on its own,
// so one slow domain (a boot, an ACPI shutdown, an image fetch) holds up
// no other.
func (h *Host) Run(ctx context.Context) {
	h.ctx = ctx
	defer h.wg.Wait()
	defer h.stopAll()
	tick := time.NewTicker(h.cfg.Interval)
	defer tick.Stop()
	caught := h.cfg.Ready.CaughtUpCh() // a pass as soon as the replica has caught up
	forwardsClosed := false
	for {
		changed := h.cfg.FSM.Watch(raftfsm.NodeTopic(h.cfg.Name)) // this node's VMs only
		if h.cfg.Healthy() && !forwardsClosed {
			forwardsClosed = h.closeStaleForwards()
		}
		if h.cfg.Healthy() {
			ctx, cancel := context.WithTimeout(h.ctx, 5*time.Minute)
			result := "done"
			switch err := h.pass(ctx); {
			case errors.Is(err, errNotCaughtUp):
				result = "waiting"
			case err != nil && h.ctx.Err() == nil:
				h.cfg.Log.Warn("reconcile VMs", "err", err)
				result = "failed"
			}
			h.metrics.reconcilePasses.WithLabelValues(result).Inc()
			cancel()
		}
		select {
		case <-h.ctx.Done():
			if h.cfg.Graceful != nil && h.cfg.Graceful() {
				h.finishRemovals()
			}
			return
		case <-changed:
		case <-tick.C:
		case <-caught:
			caught = nil
		}
	}
}

// closeStaleForwards removes the port forwards a previous run of this peer
// opened into its guests and never released (it crashed holding them), once
// a run; the forwards this run opened stay. It reports whether it could look.
func (h *Host) closeStaleForwards() bool {
	gp, ok := h.cfg.Driver.(hypervisor.GuestPorts)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(h.ctx, time.Minute)
	defer cancel()
	doms, err := h.cfg.Driver.List(ctx)
	if err != nil {
		h.cfg.Log.Warn("list domains to close stale port forwards", "err", err)
		return false
	}
	for _, d := range doms {
		n, err := gp.CloseGuestPorts(ctx, d.Name)
		if err != nil {
			h.cfg.Log.Warn("close stale port forwards", "domain", d.Name, "err", err)
			continue
		}
		if n > 0 {
			h.cfg.Log.Info("closed port forwards a previous run left open", "domain", d.Name, "forwards", n)
		}
	}
	return true
}

// errNotCaughtUp is returned by a pass that waited for the replica.
var errNotCaughtUp = errors.New("the replica has not caught up since the start")

// pass removes the domains no VM wants and hands every VM's domain state to
// its worker. A replica that has not caught up since the start may be stale:
// it may still want a VM deleted meanwhile, or (restored from an older
// snapshot after a crash) not know a VM that runs here; it touches nothing.
func (h *Host) pass(ctx context.Context) error {
	if !h.cfg.Ready.CaughtUp() {
		return errNotCaughtUp
	}
	vms := h.cfg.FSM.VMsOnNode(h.cfg.Name)
	want := map[string]raftfsm.VM{}
	for _, vm := range vms {
		domain := hypervisor.DomainFor(h.cfg.Name, vm.Namespace, vm.Name, vm.Domain)
		want[domain] = vm
		// A VM new to this peer has no domain yet: its worker starts now,
		// not after the listing, which libvirt holds up while the QEMU of
		// a domain being removed exits (a second or more under emulation).
		if vm.Status == raftfsm.VMPending && !h.hasWorker(vm) {
			h.worker(vm, domain).observe(observation{listed: time.Now()})
		}
	}
	listed := time.Now()
	doms, err := h.cfg.Driver.List(ctx)
	if err != nil {
		return err
	}
	// A worker's driver call can outlive the listing: go-libvirt's calls
	// take no context, so a define under way when the VM was deleted may
	// land after the domains were listed. A stopped worker's domain is
	// therefore removed whether it was listed or not (removing a domain
	// that does not exist removes its files and nothing else).
	stopped := map[string]bool{}
	h.mu.Lock()
	for key, w := range h.workers {
		if _, ok := want[w.domain]; !ok {
			w.stop(workerStopWait)
			delete(h.workers, key)
			stopped[w.domain] = true
		}
	}
	h.mu.Unlock()
	// Removals go on beside the workers: a VM deployed right after another
	// was deleted does not wait for that one's domain to go (the leader
	// gives it other ports).
	have := map[string]hypervisor.State{}
	for _, d := range doms {
		if strings.HasPrefix(d.Name, hypervisor.TemplatePrefix(h.cfg.Name)) {
			continue // the template manager's
		}
		if _, ok := want[d.Name]; ok {
			have[d.Name] = d.State
			continue
		}
		if strings.HasPrefix(d.Name, hypervisor.HotPrefix(h.cfg.Name)) && !stopped[d.Name] {
			continue // a hot guest no VM claimed: the hot pool's
		}
		delete(stopped, d.Name)
		h.remove(d.Name)
	}
	for domain := range stopped {
		h.remove(domain)
	}
	for domain, vm := range want {
		st, exists := have[domain]
		h.worker(vm, domain).observe(observation{state: st, exists: exists, listed: listed})
	}
	return nil
}

// RemoveTimeout bounds the removal of one domain a deleted VM left (a
// wait for a deleted VM's domain to go is bounded by it).
const RemoveTimeout = 2 * time.Minute

// finishWait bounds the listing of finishRemovals.
const finishWait = 30 * time.Second

// finishRemovals, as the peer stops cleanly, removes the domains of the VMs
// deleted since its last pass: a delete the cluster acknowledged is not left
// half done (a domain defined, shut off) until the peer's next start. The
// removals under way, and these, run to their end (each bounded by
// RemoveTimeout; Run waits for them).
func (h *Host) finishRemovals() {
	if !h.cfg.Ready.CaughtUp() {
		return
	}
	want := map[string]bool{}
	for _, vm := range h.cfg.FSM.VMsOnNode(h.cfg.Name) {
		want[hypervisor.DomainFor(h.cfg.Name, vm.Namespace, vm.Name, vm.Domain)] = true
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), finishWait)
	defer cancel()
	doms, err := h.cfg.Driver.List(ctx)
	if err != nil {
		h.cfg.Log.Warn("list domains before stopping", "err", err)
		return
	}
	for _, d := range doms {
		if want[d.Name] || strings.HasPrefix(d.Name, hypervisor.TemplatePrefix(h.cfg.Name)) || strings.HasPrefix(d.Name, hypervisor.HotPrefix(h.cfg.Name)) {
			continue // a VM's, or the template manager's or the hot pool's
		}
		h.remove(d.Name)
	}
}

// remove takes a domain nobody wants down and away, on a goroutine of its
// own; a removal under way is not started again. It runs to its end even
// when the peer stops meanwhile (bounded by RemoveTimeout).
func (h *Host) remove(domain string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.removing[domain] {
		return
	}
	h.removing[domain] = true
	h.cfg.Log.Info("removing a domain nobody wants", "domain", domain)
	h.wg.Go(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(h.ctx), RemoveTimeout)
		defer cancel()
		if err := h.cfg.Driver.Delete(ctx, domain); err != nil {
			h.cfg.Log.Warn("remove domain", "domain", domain, "err", err)
		}
		h.mu.Lock()
		delete(h.removing, domain)
		h.mu.Unlock()
	})
}

// hasWorker reports whether the VM has a worker.
func (h *Host) hasWorker(vm raftfsm.VM) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.workers[vm.Namespace+"/"+vm.Name]
	return ok
}

// agentHeard tells the VM's worker that its guest's agent answered (a run
// went through it), and wakes it: the agent is asked what the guest is at
// once, not at its next probe, so that the VM's guest line says the agent
// answers as soon as it does.
func (h *Host) agentHeard(vm raftfsm.VM) {
	h.mu.Lock()
	w := h.workers[vm.Namespace+"/"+vm.Name]
	h.mu.Unlock()
	if w == nil {
		return
	}
	w.heard.Store(true)
	select {
	case w.kick <- struct{}{}:
	default: // a run is due already; it asks
	}
}

// worker returns the VM's worker, starting it the first time.
func (h *Host) worker(vm raftfsm.VM, domain string) *vmWorker {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := vm.Namespace + "/" + vm.Name
	if w, ok := h.workers[key]; ok {
		return w
	}
	ctx, cancel := context.WithCancel(h.ctx)
	w := &vmWorker{h: h, ns: vm.Namespace, name: vm.Name, domain: domain, kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	h.workers[key] = w
	go w.loop(ctx)
	return w
}

func (h *Host) stopAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for key, w := range h.workers {
		w.stop(workerStopWait)
		delete(h.workers, key)
	}
}
