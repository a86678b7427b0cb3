package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// How often a running VM's guest agent is asked what the guest is: often
// until it first answered (it starts with the guest), then seldom; seldom
// too once it has been silent for agentPatience (a guest without one: a
// call to a port nobody answers on can take a second, held by the VM's
// worker).
const (
	agentProbeEvery   = 2 * time.Second
	agentRefreshEvery = time.Minute
	agentCallTimeout  = 3 * time.Second
	agentPatience     = 5 * time.Minute
)

// agentEvery is how often the guest's agent is asked now.
func (w *vmWorker) agentEvery(vm raftfsm.VM) time.Duration {
	if vm.Guest != nil || w.agentGaveUp() {
		return agentRefreshEvery
	}
	return agentProbeEvery
}

// agentGaveUp reports whether the agent has been silent for agentPatience.
func (w *vmWorker) agentGaveUp() bool {
	return !w.agentSilent.IsZero() && time.Since(w.agentSilent) > agentPatience
}

// identityTryNow reports whether a due identity step is to be tried now:
// at once when the agent has answered since the last try, else at each
// probe interval (seldom once the agent has been silent for agentPatience).
// Not at the interval of a guest whose agent answered before: that is its
// refresh, a minute, and the step is what a job waits for.
func (w *vmWorker) identityTryNow() bool {
	if w.agentAnswer.After(w.identityTried) {
		return true
	}
	every := agentProbeEvery
	if w.agentGaveUp() {
		every = agentRefreshEvery
	}
	return time.Since(w.identityTried) >= every
}

// agentAnswered notes whether the agent answered a call.
func (w *vmWorker) agentAnswered(ok bool) {
	switch {
	case ok:
		w.agentSilent, w.agentAnswer = time.Time{}, time.Now()
	case w.agentSilent.IsZero():
		w.agentSilent = time.Now()
	}
}

// askAgent returns, when it is time to ask, what the running VM's guest
// agent says of the guest, if that differs from the VM's record; nil when
// there is nothing to report. An agent that answered before and no longer
// does clears the record.
func (w *vmWorker) askAgent(ctx context.Context, vm raftfsm.VM) *raftfsm.GuestReport {
	ag, ok := w.h.cfg.Driver.(hypervisor.GuestAgent)
	if !ok {
		return nil
	}
	if heard := w.heard.Swap(false); !heard && time.Since(w.agentAsked) < w.agentEvery(vm) {
		return nil
	}
	w.agentAsked = time.Now()
	actx, cancel := context.WithTimeout(ctx, agentCallTimeout)
	defer cancel()
	info, err := ag.GuestInfo(actx, w.domain)
	w.agentAnswered(!errors.Is(err, hypervisor.ErrNoAgent))
	switch {
	case errors.Is(err, hypervisor.ErrNoAgent):
		if vm.Guest != nil {
			return &raftfsm.GuestReport{} // it went away
		}
		return nil
	case err != nil:
		w.h.cfg.Log.Debug("ask the guest agent", "vm", w.ns+"/"+w.name, "err", err)
		return nil
	}
	r := &raftfsm.GuestReport{Agent: true, OS: info.OS, IPs: info.IPs}
	if g := vm.Guest; g != nil && g.OS == r.OS && slices.Equal(g.IPs, r.IPs) {
		return nil
	}
	return r
}

// A guest that started from nothing is made its own by its image's identity
// step (hypervisor.RunIdentityStep): a restored one before it is reported
// Running, waiting up to Config.AgentWait for its agent to reconnect; a
// booted one once its agent answers, tried at each agent probe. A guest
// whose agent has not answered within AgentWait is reported none (it keeps
// what it has), and the step still runs if the agent answers later.
const identityStepWait = 30 * time.Second

// identityDue notes that the guest has just started how and needs its
// identity step, and returns the record's pending report.
func (w *vmWorker) identityDue(how string) *raftfsm.IdentityReport {
	if !w.hasAgent() {
		w.identityHow = ""
		return noAgentIdentity()
	}
	w.identityHow, w.identityTried, w.identitySince = how, time.Time{}, time.Now()
	return pendingIdentity()
}

func pendingIdentity() *raftfsm.IdentityReport {
	return &raftfsm.IdentityReport{State: raftfsm.IdentityPending, Message: "waiting for the guest's agent"}
}

func silentAgentIdentity(wait time.Duration) *raftfsm.IdentityReport {
	return &raftfsm.IdentityReport{State: raftfsm.IdentityNone, Message: fmt.Sprintf(api.IdentityNoAgentYet+" within %s: the guest keeps "+
		"the host name, keys and machine id it has (its image needs QEMU's guest agent); the identity step runs if one answers later", wait)}
}

// hasAgent reports whether the hypervisor has a guest agent channel.
func (w *vmWorker) hasAgent() bool {
	_, ok := w.h.cfg.Driver.(hypervisor.GuestAgent)
	return ok
}

func noAgentIdentity() *raftfsm.IdentityReport {
	return &raftfsm.IdentityReport{State: raftfsm.IdentityNone, Message: "the hypervisor has no guest agent to run the image's identity step"}
}

// identityWhenDue runs a due identity step when it is time to try; nil when
// none is due or it is not time.
func (w *vmWorker) identityWhenDue(ctx context.Context, vm raftfsm.VM) *raftfsm.IdentityReport {
	if w.identityHow == "" && vm.Identity != nil && vm.Identity.State == raftfsm.IdentityPending {
		// Due when this peer restarted: the record remembers it.
		w.identityHow, w.identitySince = hypervisor.IdentityBoot, time.Now()
		if vm.StartedFrom == raftfsm.StartedFromTemplate {
			w.identityHow = hypervisor.IdentityRestore
		}
	}
	if w.identityHow == "" || !w.identityTryNow() {
		return nil
	}
	return w.makeOwn(ctx, vm, w.identityHow, 0)
}

// makeOwn runs the identity step of the VM's image in its guest, started
// how, and returns the record's report of it. While the agent does not
// answer the step stays due: pending for AgentWait after it fell due, then
// none.
func (w *vmWorker) makeOwn(ctx context.Context, vm raftfsm.VM, how string, agentWait time.Duration) *raftfsm.IdentityReport {
	if !w.hasAgent() {
		w.identityHow = ""
		return noAgentIdentity()
	}
	if w.identityHow == "" {
		w.identitySince = time.Now()
	}
	w.identityHow, w.identityTried = how, time.Now()
	sctx, cancel := context.WithTimeout(ctx, identityStepWait)
	defer cancel()
	start := time.Now()
	err := hypervisor.RunIdentityStep(sctx, w.h.cfg.Driver, w.domain, vm.Name, how, agentWait)
	w.agentAnswered(!errors.Is(err, hypervisor.ErrNoAgent))
	var r raftfsm.IdentityReport
	switch {
	case err == nil:
		r.State = raftfsm.IdentitySet
	case errors.Is(err, hypervisor.ErrNoIdentityStep):
		r.State, r.Message = raftfsm.IdentityNone, err.Error()+": the guest keeps the host name, keys and machine id it has"
	case errors.Is(err, hypervisor.ErrNoAgent) && time.Since(w.identitySince) < w.h.cfg.AgentWait:
		return pendingIdentity()
	case errors.Is(err, hypervisor.ErrNoAgent):
		return silentAgentIdentity(w.h.cfg.AgentWait) // still due
	case ctx.Err() != nil:
		return nil // the worker stops
	default:
		r.State, r.Message = raftfsm.IdentityFailed, err.Error()
	}
	w.identityHow = ""
	w.h.cfg.Log.Info("identity step", "vm", w.ns+"/"+w.name, "how", how, "state", r.State, "message", r.Message, "took", time.Since(start).Round(time.Millisecond))
	return &r
}
