package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// stopGrace is how long a guest gets to shut down over ACPI before it is
// forced off.
const stopGrace = 20 * time.Second

// reconcileLoop keeps the hypervisor in step with the VMs the replicated
// state places on this peer, in both directions, at every change of the
// state and at least every VMInterval (so it also corrects what changed
// behind its back, and catches up after a restart).
func (p *Peer) reconcileLoop() {
	tick := time.NewTicker(p.cfg.VMInterval)
	defer tick.Stop()
	caught := p.caught.ch // a pass as soon as the replica has caught up
	for {
		changed := p.FSM().Changed()
		if p.hypervisorOK() {
			ctx, cancel := context.WithTimeout(p.ctx, 15*time.Minute)
			result := "done"
			switch err := p.reconcileVMs(ctx); {
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

func (p *Peer) reconcileVMs(ctx context.Context) error {
	// A replica that has not caught up since the start may be stale: it may
	// still want a VM deleted meanwhile, or (restored from an older snapshot
	// after a crash) not yet know a VM that runs here. It touches nothing.
	if !p.CaughtUp() {
		return errNotCaughtUp
	}
	doms, err := p.driver.List(ctx)
	if err != nil {
		return err
	}
	vms := p.FSM().VMsOnNode(p.cfg.Name)
	want := map[string]bool{}
	for _, vm := range vms {
		want[hypervisor.DomainName(p.cfg.Name, vm.Namespace, vm.Name)] = true
	}
	// Removals first: they free the ports and room that new VMs may take.
	have := map[string]hypervisor.State{}
	for _, d := range doms {
		if want[d.Name] {
			have[d.Name] = d.State
			continue
		}
		p.cfg.Log.Info("removing a domain nobody wants", "domain", d.Name)
		if err := p.driver.Delete(ctx, d.Name); err != nil {
			p.cfg.Log.Warn("remove domain", "domain", d.Name, "err", err)
		}
	}
	for _, vm := range vms {
		name := hypervisor.DomainName(p.cfg.Name, vm.Namespace, vm.Name)
		st, exists := have[name]
		if err := p.reconcileVM(ctx, vm, name, st, exists); err != nil {
			if ctx.Err() != nil {
				return err
			}
			if errors.Is(err, hypervisor.ErrNotFound) {
				// It vanished since List: the next pass recreates it.
				p.cfg.Log.Info("domain vanished while reconciling", "vm", vm.Namespace+"/"+vm.Name)
				continue
			}
			if errors.Is(err, errRetry) {
				p.cfg.Log.Warn("starting vm failed; trying again", "vm", vm.Namespace+"/"+vm.Name, "err", err)
				continue
			}
			p.cfg.Log.Warn("vm failed", "vm", vm.Namespace+"/"+vm.Name, "err", err)
			p.reportStatus(ctx, vm, raftfsm.VMFailed, err.Error())
		}
	}
	return nil
}

// reconcileVM brings one VM's domain to what the user wants and reports the
// status it reached.
func (p *Peer) reconcileVM(ctx context.Context, vm raftfsm.VM, name string, st hypervisor.State, exists bool) error {
	if vm.Status == raftfsm.VMFailed {
		return nil // stays as it is until the user acts (start, revert, delete)
	}
	if st == hypervisor.StateStopping {
		return nil // the guest is shutting down; look again next pass
	}
	key := vm.Namespace + "/" + vm.Name
	revert := vm.RevertGen > vm.ObservedRevertGen && p.revertedTo(key) < vm.RevertGen
	note := ""
	switch {
	case revert || !exists:
		if err := p.ensureBlob(ctx, vm.ImageDigest); err != nil {
			return err
		}
		spec := p.specFor(vm, name)
		if revert {
			p.cfg.Log.Info("reverting vm", "vm", key)
			if err := p.driver.Revert(ctx, spec); err != nil {
				return fmt.Errorf("revert: %w", err)
			}
			p.setReverted(key, vm.RevertGen)
		} else {
			if vm.Status != raftfsm.VMPending {
				note = "the domain was missing and has been recreated"
				p.cfg.Log.Warn("recreating a vanished domain", "vm", key)
			}
			if err := p.driver.Create(ctx, spec); err != nil {
				return p.retryOrFail(vm, key, fmt.Errorf("create: %w", err))
			}
		}
		st = hypervisor.StateRunning
	}
	var err error
	switch vm.Desired {
	case raftfsm.VMRunning:
		switch st {
		case hypervisor.StatePaused:
			err = p.driver.Resume(ctx, name)
		case hypervisor.StateRunning:
		default:
			if err := p.driver.Start(ctx, name); err != nil {
				return p.retryOrFail(vm, key, err)
			}
		}
		st = hypervisor.StateRunning
	case raftfsm.VMStopped:
		if st != hypervisor.StateShutoff {
			err = p.driver.Stop(ctx, name, stopGrace)
			st = hypervisor.StateShutoff
		}
	case raftfsm.VMSuspended:
		if st == hypervisor.StateRunning {
			err = p.driver.Suspend(ctx, name)
			st = hypervisor.StatePaused
		}
	}
	if err != nil {
		return err
	}
	p.resetFailures(key)
	status := map[hypervisor.State]string{
		hypervisor.StateRunning: raftfsm.VMRunning, hypervisor.StatePaused: raftfsm.VMSuspended,
		hypervisor.StateShutoff: raftfsm.VMStopped,
	}[st]
	if status == "" {
		return fmt.Errorf("the domain is %s", st)
	}
	// A note stays until the status changes.
	msg := note
	if msg == "" && status == vm.Status {
		msg = vm.ErrorMessage
	}
	gen := max(vm.ObservedRevertGen, p.revertedTo(key))
	if status != vm.Status || msg != vm.ErrorMessage || gen != vm.ObservedRevertGen {
		p.reportGen(ctx, vm, status, msg, gen)
	}
	return nil
}

func (p *Peer) reportStatus(ctx context.Context, vm raftfsm.VM, status, msg string) {
	p.reportGen(ctx, vm, status, msg, vm.ObservedRevertGen)
}

func (p *Peer) reportGen(ctx context.Context, vm raftfsm.VM, status, msg string, gen int64) {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := p.Apply(rctx, raftfsm.TypeVMStatus, raftfsm.VMStatus{
		Namespace: vm.Namespace, Name: vm.Name, Node: p.cfg.Name, Status: status, ErrorMessage: msg, ObservedRevertGen: gen,
	})
	if err != nil && !errors.Is(err, raftfsm.ErrNotFound) {
		p.cfg.Log.Warn("report vm status", "vm", vm.Namespace+"/"+vm.Name, "status", status, "err", err)
	}
}

// maxFailures is how many passes in a row may fail to recreate or start a VM
// that ran before (libvirt restarting, a domain removed behind the peer's
// back, files in flux) before it is Failed. A new VM that cannot start fails
// at once, so that its deploy answers.
const maxFailures = 5

// retryOrFail returns err marked for a retry on the next pass while a VM that
// ran before has failed fewer than maxFailures passes in a row.
func (p *Peer) retryOrFail(vm raftfsm.VM, key string, err error) error {
	if vm.Status != raftfsm.VMPending && p.countFailure(key) < maxFailures {
		return fmt.Errorf("%w: %v", errRetry, err)
	}
	return err
}

// errNotCaughtUp is returned by a reconcile pass that waited for the replica.
var errNotCaughtUp = errors.New("the replica has not caught up since the start")

// errRetry marks a failure the next reconcile pass tries again.
var errRetry = errors.New("will retry")

func (p *Peer) countFailure(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failures == nil {
		p.failures = map[string]int{}
	}
	p.failures[key]++
	return p.failures[key]
}

func (p *Peer) resetFailures(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.failures, key)
}

func (p *Peer) revertedTo(key string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reverted[key]
}

func (p *Peer) setReverted(key string, gen int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reverted == nil {
		p.reverted = map[string]int64{}
	}
	p.reverted[key] = gen
}

// specFor turns a VM of the replicated state into a hypervisor spec.
func (p *Peer) specFor(vm raftfsm.VM, name string) hypervisor.Spec {
	fwd := []hypervisor.Forward{{HostPort: vm.SSHPort, GuestPort: 22}, {HostPort: vm.ScreensharePort, GuestPort: 5900}}
	for _, r := range vm.ReservedPorts {
		fwd = append(fwd, hypervisor.Forward{HostPort: r.Host, GuestPort: r.Guest})
	}
	return hypervisor.Spec{
		Name: name, CPU: vm.CPU, MemoryMiB: vm.MemoryBytes >> 20,
		BaseImage: p.images.Path(vm.ImageDigest), BaseFormat: vm.ImageFormat,
		LegacyIO: vm.LegacyIO, ListenAddr: p.cfg.Bind, VNCPort: vm.VNCPort, VNCPassword: vm.VNCPassword, Forwards: fwd,
	}
}

// ensureBlob makes sure this peer holds an image blob, streaming it from a
// peer that holds it, and records the new copy.
func (p *Peer) ensureBlob(ctx context.Context, digest string) error {
	if p.images.Has(digest) {
		return nil
	}
	b, ok := p.FSM().Blob(digest)
	if !ok {
		return fmt.Errorf("image blob %s is unknown to the cluster", digest)
	}
	var sources []string
	for _, h := range b.Holders {
		if h == p.cfg.Name {
			continue
		}
		if addr := p.apiAddrOf(h); addr != "" {
			sources = append(sources, "http://"+addr)
		}
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	if err := p.images.Fetch(fctx, p.peerHTTP, digest, sources); err != nil {
		return fmt.Errorf("image %s from %s: %w", digest, strings.Join(b.Holders, ","), err)
	}
	p.cfg.Log.Info("fetched image blob", "digest", digest, "bytes", b.SizeBytes, "took", time.Since(start))
	if _, err := p.Apply(ctx, raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: digest, Node: p.cfg.Name}); err != nil {
		p.cfg.Log.Warn("record blob holder", "digest", digest, "err", err)
	}
	return nil
}

// healthLoop probes the hypervisor and gossips a problem while it does not
// answer, so that the leader marks this node NOT READY and places no VMs here.
func (p *Peer) healthLoop() {
	tick := time.NewTicker(p.cfg.HealthInterval)
	defer tick.Stop()
	for {
		problem := ""
		if p.driver == nil {
			problem = "no hypervisor driver"
		} else {
			ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
			if err := p.driver.Probe(ctx); err != nil {
				problem = "hypervisor does not answer: " + err.Error()
			}
			cancel()
		}
		p.setProblem(problem)
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *Peer) setProblem(problem string) {
	p.mu.Lock()
	changed := p.problem != problem
	p.problem = problem
	p.mu.Unlock()
	if !changed {
		return
	}
	if problem != "" {
		p.cfg.Log.Error("this node takes no VMs", "why", problem)
	} else {
		p.cfg.Log.Info("hypervisor answers; this node takes VMs")
	}
	r := p.report()
	r.Problem = problem
	if err := p.gossip.SetReport(r); err != nil {
		p.cfg.Log.Warn("gossip report", "err", err)
	}
}

func (p *Peer) hypervisorOK() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.driver != nil && p.problem == ""
}
