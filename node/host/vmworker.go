package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
)

// StopGrace is how long a guest gets to shut down over ACPI before it is
// forced off.
const StopGrace = 20 * time.Second

// maxFailures is how many runs in a row may fail to recreate or start a VM
// that ran before (libvirt restarting, a domain removed behind the peer's
// back, files in flux) before it is Failed. A new VM that cannot start fails
// at once, so that its deploy answers.
const maxFailures = 5

// transientFor bounds how long runs that fail for a resource the host
// lacks for a moment (hypervisor.ErrTransient) are tried again.
const transientFor = 30 * time.Second

// errRetry marks a failure the next run tries again. A new VM's failure
// is final at once (its deploy answers), unless the host was only short of
// a resource for a moment (hypervisor.ErrTransient).
var errRetry = errors.New("will retry")

// observation is what a pass saw of a VM's domain, and when its listing began.
type observation struct {
	state  hypervisor.State
	exists bool
	listed time.Time
}

// vmWorker converges one VM's domain to what the replicated state wants, on
// its own goroutine, each time a pass hands it an observation. It owns the
// VM's bookkeeping: the revert generation it carried out and its failures
// in a row.
type vmWorker struct {
	h                *Host
	ns, name, domain string
	kick             chan struct{}
	cancel           context.CancelFunc
	done             chan struct{}
	reverted         int64     // worker goroutine only
	failures         int       // worker goroutine only
	failingSince     time.Time // worker goroutine only: the first of those failures
	settled          time.Time // worker goroutine only: end of its last change
	opID             uint64    // worker goroutine only: the image operation tried
	opTries          int       // worker goroutine only: its attempts
	agentAsked       time.Time // worker goroutine only: when the guest's agent was last asked
	agentSilent      time.Time // worker goroutine only: since when it has not answered (zero: it answers)
	agentAnswer      time.Time // worker goroutine only: when it last answered
	identityHow      string    // worker goroutine only: the identity step due (hypervisor.IdentityBoot...), "" when none is
	identityTried    time.Time // worker goroutine only: when it was last tried
	identitySince    time.Time // worker goroutine only: since when it is due
	// heard: a run in the guest went through its agent since the last
	// time the agent was asked (agentHeard), so it is asked at once.
	heard  atomic.Bool
	mu     sync.Mutex
	latest observation
}

// observe hands the worker the latest observation and wakes it.
func (w *vmWorker) observe(o observation) {
	w.mu.Lock()
	w.latest = o
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default: // a run is already due; it reads the latest observation
	}
}

// stop ends the worker and waits, at most wait, for a run in progress.
func (w *vmWorker) stop(wait time.Duration) {
	w.cancel()
	select {
	case <-w.done:
	case <-time.After(wait):
		w.h.cfg.Log.Warn("a VM worker did not stop in time", "vm", w.ns+"/"+w.name)
	}
}

func (w *vmWorker) loop(ctx context.Context) {
	defer close(w.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.kick:
		}
		w.mu.Lock()
		o := w.latest
		w.mu.Unlock()
		if o.listed.Before(w.settled) {
			continue // listed before this worker's last change: the next pass tells
		}
		vm, ok := w.h.cfg.FSM.VM(w.ns, w.name)
		if !ok {
			continue // deleted: the pass stops this worker
		}
		if vm.PendingOp != nil {
			w.runImageOp(ctx, vm, o)
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		w.run(rctx, vm, o)
		cancel()
	}
}

// run converges the VM once and reports what happened.
func (w *vmWorker) run(ctx context.Context, vm raftfsm.VM, o observation) {
	p, key := w.h, w.ns+"/"+w.name
	err := w.converge(ctx, vm, o.state, o.exists)
	result := "ok"
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return
	case errors.Is(err, hypervisor.ErrNotFound):
		// It vanished since the listing: the next pass recreates it.
		p.cfg.Log.Info("domain vanished while reconciling", "vm", key)
		result = "retry"
	case errors.Is(err, errRetry):
		p.cfg.Log.Warn("starting vm failed; trying again", "vm", key, "err", err)
		result = "retry"
	default:
		p.cfg.Log.Warn("vm failed", "vm", key, "err", err)
		msg, reason := err.Error(), ""
		if r := (*diskcheck.RefusedError)(nil); errors.As(err, &r) {
			// The user's disk, not this host, is at fault: the deploy says so.
			msg, reason = "the image's disk is refused: "+r.Reason, api.ReasonBadRequest
		} else if errors.Is(err, imagestore.ErrDigestMismatch) && vm.ImageSource != "" {
			// So is a registry whose disk is not the content it names.
			reason = api.ReasonBadRequest
		} else if errors.Is(err, ocidisk.ErrRegistryRefused) {
			// The registry refused the VM's image (unknown, denied, not
			// spoken to as asked): the caller's to fix, in its words.
			reason = api.ReasonBadRequest
		} else if errors.Is(err, diskbudget.ErrNoRoom) {
			// The node is full: a conflict with what it holds, not a fault.
			reason = api.ReasonConflict
		}
		w.reportFailed(ctx, vm, msg, reason)
		result = "failed"
	}
	p.metrics.vmRuns.WithLabelValues(result).Inc()
}

// converge brings the VM's domain to what the user wants and reports the
// status it reached.
func (w *vmWorker) converge(ctx context.Context, vm raftfsm.VM, st hypervisor.State, exists bool) error {
	p, key, name := w.h, w.ns+"/"+w.name, w.domain
	s := plan(vm, st, exists, w.reverted)
	if s.skip {
		return nil
	}
	changed := false // the domain was changed: listings from before are stale
	defer func() {
		if changed {
			w.settled = time.Now()
		}
	}()
	revert := s.make == makeRevert
	note, started := "", "" // started: how the guest started, when this run started it
	booted := false         // this run powered the guest on from nothing
	if s.make == makeNew || s.make == makeRecreate {
		// Room for the disk first: no image is fetched for a VM that
		// cannot have its disk here.
		hold, err := p.holdDisk(vm)
		if err != nil {
			return err
		}
		defer hold.Release() // made, the VMs' growth counts it
	}
	if s.make != makeNone {
		// Each blob is held from the moment it is here until the VM's
		// disk, made from it, exists: the collection of blobs this node no
		// longer holds must not take it in between.
		for _, d := range []string{vm.ImageDigest, vm.ISODigest, vm.NVRAMDigest} {
			if d == "" {
				continue
			}
			if err := p.cfg.Blobs.EnsureBlob(ctx, vm, d); err != nil {
				return err
			}
			release, err := p.cfg.Blobs.HoldBlob(d)
			if err != nil {
				return fmt.Errorf("image blob %s went as the VM was about to start from it: %w", d, err)
			}
			defer release()
		}
		spec := p.specFor(vm, name)
		var err error
		if spec.SharedDir, err = p.sharedDir(ctx, vm); err != nil {
			return err
		}
		changed = true
		switch s.make {
		case makeRevert:
			p.cfg.Log.Info("reverting vm", "vm", key)
			if err := p.revert(ctx, spec); err != nil {
				return fmt.Errorf("revert: %w", err)
			}
			w.reverted, booted = vm.RevertGen, true
		case makeRecreate:
			note = "the domain was missing and has been recreated"
			p.cfg.Log.Warn("recreating a vanished domain", "vm", key)
			w.reportRemaking(ctx, vm)
			fallthrough
		case makeNew:
			restored := false
			if s.make == makeNew && vm.Domain != "" && p.cfg.Hot != nil {
				var err error
				if restored, err = p.cfg.Hot.Claim(ctx, vm, spec); err != nil {
					return err
				}
				started = raftfsm.StartedFromHot
			}
			if !restored && s.make == makeNew && p.cfg.Templates != nil {
				var err error
				if restored, err = p.cfg.Templates.Restore(ctx, vm, spec); err != nil {
					return err
				}
				started = raftfsm.StartedFromTemplate
			}
			if !restored {
				if err := p.cfg.Driver.Create(ctx, spec); err != nil {
					return w.retryOrFail(vm, fmt.Errorf("create: %w", err))
				}
				started, booted = raftfsm.StartedFromBoot, true
			}
		}
	}
	var identity *raftfsm.IdentityReport
	switch {
	case started == raftfsm.StartedFromHot:
		// Its own already (the pool ran the step when it restored it): it
		// is named after its VM before it is Running.
		identity = w.makeOwn(ctx, vm, hypervisor.IdentityBoot, w.h.cfg.AgentWait)
	case started == raftfsm.StartedFromTemplate:
		// A copy of the template: made its own before it is Running.
		identity = w.makeOwn(ctx, vm, hypervisor.IdentityRestore, w.h.cfg.AgentWait)
	case started == raftfsm.StartedFromBoot || revert:
		identity = w.identityDue(hypervisor.IdentityBoot)
	}
	var err error
	switch s.act {
	case actResume:
		changed, err = true, p.resume(ctx, name)
	case actStart:
		changed, booted = true, true
		err := p.cfg.Driver.Start(ctx, name)
		if errors.Is(err, hypervisor.ErrDiskMissing) {
			// Repairable: a fresh disk on the image (the VM's changes are lost).
			note = "the VM's disk was missing and has been made again from its image"
			p.cfg.Log.Warn("recreating a VM whose disk is gone", "vm", key)
			spec := p.specFor(vm, name)
			if spec.SharedDir, err = p.sharedDir(ctx, vm); err == nil {
				err = p.cfg.Driver.Create(ctx, spec)
			}
			started = raftfsm.StartedFromBoot
		}
		if err != nil {
			return w.retryOrFail(vm, err)
		}
		identity = w.identityDue(hypervisor.IdentityBoot)
	case actStop:
		changed, err = true, p.cfg.Driver.Stop(ctx, name, StopGrace)
	case actSuspend:
		changed, err = true, p.suspend(ctx, name)
	}
	if err != nil {
		return err
	}
	w.failures = 0
	status := map[hypervisor.State]string{
		hypervisor.StateRunning: raftfsm.VMRunning, hypervisor.StatePaused: raftfsm.VMSuspended,
		hypervisor.StateShutoff: raftfsm.VMStopped,
	}[s.reached]
	if status == "" {
		return fmt.Errorf("the domain is %s", s.reached)
	}
	// A note stays until the status changes.
	msg := note
	if msg == "" && status == vm.Status {
		msg = vm.ErrorMessage
	}
	gen := max(vm.ObservedRevertGen, w.reverted)
	if started == vm.StartedFrom {
		started = ""
	}
	var guest *raftfsm.GuestReport
	if status == raftfsm.VMRunning {
		if booted || started != "" {
			// A guest this run powered on has no agent yet: asking it now
			// would only hold up the Running report (libvirt waits on the
			// channel, up to 0.7 s with ten guests starting). One this run
			// restored or was handed has answered its identity step: what
			// it is (several agent calls) is no reason to hold the report
			// up either. The agent is first asked one probe interval from
			// now.
			w.agentAsked = time.Now()
		}
		guest = w.askAgent(ctx, vm)
		if identity == nil {
			identity = w.identityWhenDue(ctx, vm)
		}
	}
	if identity != nil && vm.Identity != nil && *identity == *vm.Identity {
		identity = nil
	}
	if status != vm.Status || msg != vm.ErrorMessage || gen != vm.ObservedRevertGen || started != "" || guest != nil || identity != nil {
		w.apply(ctx, raftfsm.VMStatus{
			Namespace: vm.Namespace, Name: vm.Name, Node: w.h.cfg.Name, Status: status, ErrorMessage: msg, ObservedRevertGen: gen,
			StartedFrom: started, Guest: guest, Identity: identity,
		})
	}
	return nil
}

// retryOrFail returns err marked for a retry while a VM that ran before has
// failed fewer than maxFailures runs in a row, or while the host has been
// short of a resource for less than transientFor.
func (w *vmWorker) retryOrFail(vm raftfsm.VM, err error) error {
	if w.failures == 0 {
		w.failingSince = time.Now()
	}
	w.failures++
	switch {
	case errors.Is(err, hypervisor.ErrTransient) && time.Since(w.failingSince) < transientFor:
	case vm.Status != raftfsm.VMPending && w.failures < maxFailures:
	default:
		return err
	}
	return fmt.Errorf("%w: %v", errRetry, err)
}

// reportRemaking clears what the record says of a guest that is gone
// before its domain is made again (a state restored from a snapshot says
// so of a VM deleted since): until the new guest's agent answers, no one
// may take the record's identity and guest facts for the new guest's.
func (w *vmWorker) reportRemaking(ctx context.Context, vm raftfsm.VM) {
	identity := pendingIdentity()
	if !w.hasAgent() {
		identity = noAgentIdentity()
	}
	w.apply(ctx, raftfsm.VMStatus{
		Namespace: vm.Namespace, Name: vm.Name, Node: w.h.cfg.Name, Status: vm.Status,
		ErrorMessage: "the domain was missing and is being made again", ObservedRevertGen: vm.ObservedRevertGen,
		Guest: &raftfsm.GuestReport{}, Identity: identity,
	})
}

// reportFailed records that the VM failed, and why (reason: see
// raftfsm.VM.ErrorReason).
func (w *vmWorker) reportFailed(ctx context.Context, vm raftfsm.VM, msg, reason string) {
	w.apply(ctx, raftfsm.VMStatus{
		Namespace: vm.Namespace, Name: vm.Name, Node: w.h.cfg.Name, Status: raftfsm.VMFailed, ErrorMessage: msg, ErrorReason: reason,
		ObservedRevertGen: vm.ObservedRevertGen,
	})
}

func (w *vmWorker) apply(ctx context.Context, st raftfsm.VMStatus) {
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, err := w.h.cfg.Proposer.Apply(rctx, raftfsm.TypeVMStatus, st)
	switch {
	case err == nil, errors.Is(err, raftfsm.ErrNotFound):
	case ctx.Err() != nil:
		// The worker stopped (its VM was deleted, or the peer stops): the
		// status no longer matters.
		w.h.cfg.Log.Debug("vm status not reported: the worker stopped", "vm", st.Namespace+"/"+st.Name, "status", st.Status, "err", err)
	default:
		w.h.cfg.Log.Warn("report vm status", "vm", st.Namespace+"/"+st.Name, "status", st.Status, "err", err)
	}
}
