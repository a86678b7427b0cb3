package node

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// reconciler keeps this peer's domains in step with the VMs the replicated
// state places here, in both directions. A pass (at every change of a VM
// placed here, not for other nodes' VMs or jobs, and at least every
// VMInterval, so that it also corrects what changed behind its back) lists
// the domains, removes those no VM wants, and hands every wanted VM's
// domain state to that VM's worker. A worker
// converges its VM on its own, so one slow domain (a boot, an ACPI shutdown,
// an image fetch) holds up no other.
type reconciler struct {
	p *Peer

	mu       sync.Mutex
	workers  map[string]*vmWorker // by "namespace/name"
	removing map[string]bool      // domains being removed, by name
}

func newReconciler(p *Peer) *reconciler {
	return &reconciler{p: p, workers: map[string]*vmWorker{}, removing: map[string]bool{}}
}

// workerStopWait bounds the wait for a worker to stop before its domain is
// removed.
const workerStopWait = 30 * time.Second

// run passes until the peer stops, then stops every worker.
func (rc *reconciler) run() {
	p := rc.p
	defer rc.stopAll()
	tick := time.NewTicker(p.cfg.VMInterval)
	defer tick.Stop()
	caught := p.caught.ch // a pass as soon as the replica has caught up
	for {
		changed := p.FSM().Watch(raftfsm.NodeTopic(p.cfg.Name)) // this node's VMs only
		if p.hypervisorOK() {
			ctx, cancel := context.WithTimeout(p.ctx, 5*time.Minute)
			result := "done"
			switch err := rc.pass(ctx); {
			case errors.Is(err, errNotCaughtUp):
				result = "waiting"
			case err != nil && p.ctx.Err() == nil:
				p.cfg.Log.Warn("reconcile VMs", "err", err)
				result = "failed"
			}
			p.metrics.reconcilePasses.WithLabelValues(result).Inc()
			cancel()
		}
		select {
		case <-p.ctx.Done():
			return
		case <-changed:
		case <-tick.C:
		case <-caught:
			caught = nil
		}
	}
}

// errNotCaughtUp is returned by a pass that waited for the replica.
var errNotCaughtUp = errors.New("the replica has not caught up since the start")

// pass removes the domains no VM wants and hands every VM's domain state to
// its worker. A replica that has not caught up since the start may be stale:
// it may still want a VM deleted meanwhile, or (restored from an older
// snapshot after a crash) not know a VM that runs here; it touches nothing.
func (rc *reconciler) pass(ctx context.Context) error {
	p := rc.p
	if !p.CaughtUp() {
		return errNotCaughtUp
	}
	vms := p.FSM().VMsOnNode(p.cfg.Name)
	want := map[string]raftfsm.VM{}
	for _, vm := range vms {
		domain := hypervisor.DomainName(p.cfg.Name, vm.Namespace, vm.Name)
		want[domain] = vm
		// A VM new to this peer has no domain yet: its worker starts now,
		// not after the listing, which libvirt holds up while the QEMU of
		// a domain being removed exits (a second or more under emulation).
		if vm.Status == raftfsm.VMPending && !rc.hasWorker(vm) {
			rc.worker(vm, domain).observe(observation{listed: time.Now()})
		}
	}
	listed := time.Now()
	doms, err := p.driver.List(ctx)
	if err != nil {
		return err
	}
	rc.mu.Lock()
	for key, w := range rc.workers {
		if _, ok := want[w.domain]; !ok {
			w.stop(workerStopWait)
			delete(rc.workers, key)
		}
	}
	rc.mu.Unlock()
	// Removals go on beside the workers: a VM deployed right after another
	// was deleted does not wait for that one's domain to go (the leader
	// gives it other ports).
	have := map[string]hypervisor.State{}
	for _, d := range doms {
		if _, ok := want[d.Name]; ok {
			have[d.Name] = d.State
			continue
		}
		rc.remove(d.Name)
	}
	for domain, vm := range want {
		st, exists := have[domain]
		rc.worker(vm, domain).observe(observation{state: st, exists: exists, listed: listed})
	}
	return nil
}

// removeTimeout bounds the removal of one domain.
const removeTimeout = 2 * time.Minute

// remove takes a domain nobody wants down and away, on a goroutine of its
// own; a removal under way is not started again.
func (rc *reconciler) remove(domain string) {
	p := rc.p
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.removing[domain] {
		return
	}
	rc.removing[domain] = true
	p.cfg.Log.Info("removing a domain nobody wants", "domain", domain)
	p.goRun(func() {
		ctx, cancel := context.WithTimeout(p.ctx, removeTimeout)
		defer cancel()
		if err := p.driver.Delete(ctx, domain); err != nil && p.ctx.Err() == nil {
			p.cfg.Log.Warn("remove domain", "domain", domain, "err", err)
		}
		rc.mu.Lock()
		delete(rc.removing, domain)
		rc.mu.Unlock()
	})
}

// hasWorker reports whether the VM has a worker.
func (rc *reconciler) hasWorker(vm raftfsm.VM) bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	_, ok := rc.workers[vm.Namespace+"/"+vm.Name]
	return ok
}

// worker returns the VM's worker, starting it the first time.
func (rc *reconciler) worker(vm raftfsm.VM, domain string) *vmWorker {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	key := vm.Namespace + "/" + vm.Name
	if w, ok := rc.workers[key]; ok {
		return w
	}
	ctx, cancel := context.WithCancel(rc.p.ctx)
	w := &vmWorker{p: rc.p, ns: vm.Namespace, name: vm.Name, domain: domain, kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	rc.workers[key] = w
	go w.loop(ctx)
	return w
}

func (rc *reconciler) stopAll() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for key, w := range rc.workers {
		w.stop(workerStopWait)
		delete(rc.workers, key)
	}
}
