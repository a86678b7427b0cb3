package host

import (
	"testing"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// The converge's decision table: the replicated state's wish (status,
// desired state, a revert asked) against the host's domain (its state,
// whether it exists).
func TestPlan_table(t *testing.T) {
	const (
		running   = hypervisor.StateRunning
		paused    = hypervisor.StatePaused
		shutoff   = hypervisor.StateShutoff
		stopping  = hypervisor.StateStopping
		crashed   = hypervisor.StateCrashed
		pending   = raftfsm.VMPending
		up        = raftfsm.VMRunning
		stopped   = raftfsm.VMStopped
		suspended = raftfsm.VMSuspended
	)
	cases := []struct {
		name            string
		status, desired string
		revert          bool // a revert asked and not yet carried out here
		hot             bool // its deploy claimed a hot guest (VM.Domain)
		st              hypervisor.State
		exists          bool
		want            steps
	}{
		{name: "failed_waits_for_the_user", status: raftfsm.VMFailed, desired: up, exists: false, want: steps{skip: true}},
		{name: "guest_shutting_down", status: up, desired: stopped, st: stopping, exists: true, want: steps{skip: true}},
		{name: "new_vm_made_and_running", status: pending, desired: up, want: steps{make: makeNew, reached: running}},
		{name: "new_vm_made_stopped", status: pending, desired: stopped, want: steps{make: makeNew, act: actStop, reached: shutoff}},
		{name: "vanished_domain_recreated", status: up, desired: up, want: steps{make: makeRecreate, reached: running}},
		{name: "vanished_stopped_vm_recreated_and_stopped", status: stopped, desired: stopped, want: steps{make: makeRecreate, act: actStop, reached: shutoff}},
		{name: "running_as_wanted", status: up, desired: up, st: running, exists: true, want: steps{reached: running}},
		{name: "shut_off_started", status: up, desired: up, st: shutoff, exists: true, want: steps{act: actStart, reached: running}},
		{name: "crashed_started", status: up, desired: up, st: crashed, exists: true, want: steps{act: actStart, reached: running}},
		{name: "paused_resumed", status: suspended, desired: up, st: paused, exists: true, want: steps{act: actResume, reached: running}},
		{name: "running_stopped", status: up, desired: stopped, st: running, exists: true, want: steps{act: actStop, reached: shutoff}},
		{name: "paused_stopped", status: suspended, desired: stopped, st: paused, exists: true, want: steps{act: actStop, reached: shutoff}},
		{name: "stopped_as_wanted", status: stopped, desired: stopped, st: shutoff, exists: true, want: steps{reached: shutoff}},
		{name: "running_suspended", status: up, desired: suspended, st: running, exists: true, want: steps{act: actSuspend, reached: paused}},
		{name: "suspended_as_wanted", status: suspended, desired: suspended, st: paused, exists: true, want: steps{reached: paused}},
		{name: "shut_off_not_suspended", status: stopped, desired: suspended, st: shutoff, exists: true, want: steps{reached: shutoff}},
		{name: "revert_running", status: up, desired: up, revert: true, st: running, exists: true, want: steps{make: makeRevert, reached: running}},
		{name: "revert_stopped", status: stopped, desired: stopped, revert: true, st: shutoff, exists: true, want: steps{make: makeRevert, act: actStop, reached: shutoff}},
		{name: "claimed_hot_guest_handed_over", status: pending, desired: up, hot: true, st: running, exists: true, want: steps{make: makeNew, reached: running}},
		{name: "claimed_hot_guest_gone_made_new", status: pending, desired: up, hot: true, want: steps{make: makeNew, reached: running}},
		{name: "handed_over_hot_guest_runs", status: up, desired: up, hot: true, st: running, exists: true, want: steps{reached: running}},
		{name: "revert_of_a_vanished_domain", status: up, desired: up, revert: true, want: steps{make: makeRevert, reached: running}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vm := raftfsm.VM{Status: c.status, Desired: c.desired}
			if c.hot {
				vm.Domain = "svc.n1._hot.k.g1"
			}
			reverted := int64(0)
			if c.revert {
				vm.RevertGen = 2
				vm.ObservedRevertGen = 1
				reverted = 1
			}
			if got := plan(vm, c.st, c.exists, reverted); got != c.want {
				t.Fatalf("plan = %+v, want %+v", got, c.want)
			}
		})
	}
}

// A revert this host carried out already (the state not told yet) is not
// done twice.
func TestPlan_revert_once(t *testing.T) {
	vm := raftfsm.VM{Status: raftfsm.VMRunning, Desired: raftfsm.VMRunning, RevertGen: 2, ObservedRevertGen: 1}
	if got := plan(vm, hypervisor.StateRunning, true, 2); got.make != makeNone {
		t.Fatalf("a revert carried out here is made again: %+v", got)
	}
}
