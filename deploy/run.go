package deploy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// ErrStartFailed is the kind of a deploy whose VM failed to start on its
// node for a reason of the node's, not of the request's.
var ErrStartFailed = errors.New("the VM failed to start")

// startError is a VM that failed to start: its message is the whole error.
type startError struct{ msg string }

func (e *startError) Error() string        { return e.msg }
func (e *startError) Is(target error) bool { return target == ErrStartFailed }

// Placer places a resolved deploy: a node, ports and a name, recorded
// (the leader's scheduler).
type Placer interface {
	Place(ctx context.Context, p scheduler.Placement) (raftfsm.VM, error)
}

// Replica is what a deploy waits on (*raftfsm.FSM).
type Replica = raftfsm.VMWatcher

// Runner places resolved deploys and waits until their VMs run.
type Runner struct {
	// Placer places a deploy (Place; the leader's scheduler).
	Placer  Placer
	Replica Replica
	// Remove deletes the VM of a failed deploy: this very VM (its UID), and
	// only while it has not run (raftfsm.VMDelete's Unrun).
	Remove func(ctx context.Context, vm raftfsm.VM) error
	// WriteTimeout bounds the placement and the removal.
	WriteTimeout time.Duration
	Log          *slog.Logger
}

// Run places plan and waits up to plan.Timeout for its VM to run (Place,
// then Await). A VM that fails, or does not run in time, is removed:
// nothing stays allocated after a failed deploy. Its errors: the
// placement's, and Await's.
func (r Runner) Run(ctx context.Context, plan Plan) (raftfsm.VM, error) {
	vm, err := r.Place(ctx, plan)
	if err != nil {
		return raftfsm.VM{}, err
	}
	return r.Await(ctx, vm, plan.Timeout)
}

// Place records plan's VM on a node, marked as a deploy that has not run:
// past its deploy's wait and a write timeout the leader deletes it if it
// has not run by then, whoever leads (a backstop for Await's removal, which
// a peer that stopped cannot make).
func (r Runner) Place(ctx context.Context, plan Plan) (raftfsm.VM, error) {
	by := time.Now().UTC().Add(plan.Timeout + r.WriteTimeout)
	plan.VM.DeployBy = &by
	pctx, cancel := context.WithTimeout(ctx, r.WriteTimeout)
	defer cancel()
	return r.Placer.Place(pctx, plan.Placement)
}

// Await waits up to timeout for a placed VM to run, on the replica (the
// peer the caller reached need not lead), and removes one that fails or
// does not run in time. Its errors: a failure to start of the request's
// making (ErrInvalid) or the node's (ErrStartFailed); ErrNotFound when the
// VM was deleted meanwhile; ErrTimeout.
func (r Runner) Await(ctx context.Context, vm raftfsm.VM, timeout time.Duration) (raftfsm.VM, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := r.wait(wctx, vm)
	if err == nil {
		return got, nil
	}
	return got, r.Abandon(ctx, vm, err)
}

// Abandon removes the VM of a deploy that failed with err (bounded by the
// write timeout, even when ctx has ended: the caller gone is a failure too)
// and returns err, saying whether the VM was removed.
func (r Runner) Abandon(ctx context.Context, vm raftfsm.VM, err error) error {
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), r.WriteTimeout)
	defer dcancel()
	removed := "; the VM was removed"
	if derr := r.Remove(dctx, vm); derr != nil && !errors.Is(derr, raftfsm.ErrNotFound) {
		r.log().Error("cannot remove a failed deploy", "vm", vm.Name, "err", derr)
		removed = "; the VM could not be removed: " + derr.Error()
	}
	if errors.Is(err, raftfsm.ErrTimeout) {
		return raftfsm.NewRuleError(raftfsm.ErrTimeout, err.Error()+removed)
	}
	return err
}

func (r Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// wait returns the VM placed as placed (its UID, when set) once it runs,
// or why it will not.
func (r Runner) wait(ctx context.Context, placed raftfsm.VM) (raftfsm.VM, error) {
	return raftfsm.WaitVM(ctx, r.Replica, placed.Namespace, placed.Name, placed.UID, func(vm raftfsm.VM) (bool, error) {
		switch {
		case vm.Status == raftfsm.VMFailed && vm.ErrorReason == api.ReasonBadRequest:
			return false, raftfsm.NewRuleError(raftfsm.ErrInvalid, fmt.Sprintf("vm %q cannot start: %s", vm.Name, vm.ErrorMessage))
		case vm.Status == raftfsm.VMFailed && vm.ErrorReason == api.ReasonConflict:
			return false, raftfsm.NewRuleError(raftfsm.ErrConflict, fmt.Sprintf("vm %q cannot start on node %s: %s", vm.Name, vm.Node, vm.ErrorMessage))
		case vm.Status == raftfsm.VMFailed:
			return false, &startError{msg: fmt.Sprintf("vm %q failed to start on node %s: %s", vm.Name, vm.Node, vm.ErrorMessage)}
		}
		return vm.Status == raftfsm.VMRunning, nil
	})
}
