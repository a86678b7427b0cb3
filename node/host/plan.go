package host

import (
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// A pass over one VM is decided by a table: what the replicated state
// wants of it (its status, desired state and revert generation) against
// what this host sees of its domain (its state, whether it exists). plan
// is that table; the worker's converge carries the decision out.

// making is how a pass makes the VM's domain, when it makes one.
type making int

const (
	makeNone     making = iota // the domain is there: nothing to make
	makeNew                    // a new VM: from a template of its shape, else booted
	makeRecreate               // a VM whose domain vanished: booted again, and the user told
	makeRevert                 // the VM's disk back to its image, as the user asked
)

// action is what a pass does to the domain once it is there.
type action int

const (
	actNone action = iota
	actStart
	actResume
	actStop
	actSuspend
)

// steps is a pass's decision.
type steps struct {
	// skip: nothing to do (the VM failed, and stays so until the user
	// acts; or its guest is shutting down, looked at again next pass).
	skip bool
	make making
	act  action
	// reached is the domain's state once the steps are done.
	reached hypervisor.State
}

// plan decides a pass over vm, whose domain is in state st (exists: it is
// there at all); reverted is the last revert generation this host carried
// out.
func plan(vm raftfsm.VM, st hypervisor.State, exists bool, reverted int64) steps {
	if vm.Status == raftfsm.VMFailed || st == hypervisor.StateStopping {
		return steps{skip: true}
	}
	var s steps
	switch {
	case vm.RevertGen > vm.ObservedRevertGen && reverted < vm.RevertGen:
		s.make = makeRevert
	case !exists && vm.Status == raftfsm.VMPending:
		s.make = makeNew
	case vm.Status == raftfsm.VMPending && vm.Domain != "":
		// The hot guest its deploy claimed runs already: made the VM's
		// now (handed over, or, gone, made as any new VM is).
		s.make = makeNew
	case !exists:
		s.make = makeRecreate
	}
	if s.make != makeNone {
		st = hypervisor.StateRunning // a made domain runs
	}
	switch vm.Desired {
	case raftfsm.VMRunning:
		switch st {
		case hypervisor.StatePaused:
			s.act = actResume
		case hypervisor.StateRunning:
		default:
			s.act = actStart
		}
		st = hypervisor.StateRunning
	case raftfsm.VMStopped:
		if st != hypervisor.StateShutoff {
			s.act, st = actStop, hypervisor.StateShutoff
		}
	case raftfsm.VMSuspended:
		if st == hypervisor.StateRunning {
			s.act, st = actSuspend, hypervisor.StatePaused
		}
	}
	s.reached = st
	return s
}
