package host

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// How often a running VM's guest agent is asked what the guest is: often
// until it first answered (it starts with the guest), then seldom.
const (
	agentProbeEvery   = 2 * time.Second
	agentRefreshEvery = time.Minute
	agentCallTimeout  = 3 * time.Second
)

// askAgent returns, when it is time to ask, what the running VM's guest
// agent says of the guest, if that differs from the VM's record; nil when
// there is nothing to report. An agent that answered before and no longer
// does clears the record.
func (w *vmWorker) askAgent(ctx context.Context, vm raftfsm.VM) *raftfsm.GuestReport {
	ag, ok := w.h.cfg.Driver.(hypervisor.GuestAgent)
	if !ok {
		return nil
	}
	every := agentProbeEvery
	if vm.Guest != nil {
		every = agentRefreshEvery
	}
	if time.Since(w.agentAsked) < every {
		return nil
	}
	w.agentAsked = time.Now()
	actx, cancel := context.WithTimeout(ctx, agentCallTimeout)
	defer cancel()
	info, err := ag.GuestInfo(actx, w.domain)
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
