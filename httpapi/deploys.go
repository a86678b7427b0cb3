package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/deploy"
	"github.com/svc-project/svc/internal/recorder"
	"github.com/svc-project/svc/raftfsm"
)

// A deploy runs where its caller sent it. The leader resolves and places it
// (the scheduler is there, and a replica with every acknowledged write); the
// peer the caller reached then waits on its own replica until the VM runs,
// and removes a VM that fails or does not run in time. A deploy whose wait
// outlives its leader thus still gets its answer, and no leader holds a
// connection for each deploy waiting through a peer.

// maxPlacedAnswer bounds the leader's answer a follower reads whole.
const maxPlacedAnswer = 1 << 20

func (s *vmsAPI) deployVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if !s.raft.IsLeader() && forwarded(r) == "" {
		return s.deployThroughLeader(w, r, p)
	}
	if s.fwd.toLeader(w, r, hopReplay) {
		return nil // a peer sent it here, but this peer no longer leads: refused unrun
	}
	return s.deployHere(w, r, p)
}

// deployHere resolves and places a deploy on the leader; it waits for the
// VM too, unless the peer that forwarded it waits itself (HeaderPlaceOnly).
func (s *vmsAPI) deployHere(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	var req api.DeployRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	plan, err := deploy.Resolve(r.Context(), s.replica.FSM(), s.resolveImage, ns, req)
	if err != nil {
		return err
	}
	if err := guardPoolMetadata(principalOf(r.Context()), ns, plan.VM.CustomMetadata); err != nil {
		return err
	}
	plan.VM.Owner = owner(r.Context())
	run := s.deployRunner()
	if forwarded(r) != "" && r.Header.Get(api.HeaderPlaceOnly) != "" {
		vm, err := run.Place(r.Context(), plan)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusAccepted, api.PlacedDeploy{
			Namespace: vm.Namespace, Name: vm.Name, UID: vm.UID,
			TimeoutMillis: plan.Timeout.Milliseconds(), PortWarnings: plan.Warnings,
		})
		return nil
	}
	if !waitsForRunning(r) {
		vm, err := run.Place(r.Context(), plan)
		return s.answerDeploy(w, vm, plan.Warnings, err)
	}
	got, err := run.Run(r.Context(), plan)
	return s.answerDeploy(w, got, plan.Warnings, err)
}

// waitsForRunning reports whether a deploy answers once its VM runs (the
// default) or, with ?wait=false, once it is placed (its status Pending; a
// VM that then fails stays, Failed, for its caller to delete), as a
// Kubernetes-style create does.
func waitsForRunning(r *http.Request) bool { return r.URL.Query().Get("wait") != "false" }

// deployThroughLeader has the leader resolve and place a deploy, then waits
// on this peer's replica until the VM runs. A refusal of the leader's
// reaches the caller as it is.
func (s *vmsAPI) deployThroughLeader(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	r.Header.Set(api.HeaderPlaceOnly, "1")
	ans := recorder.New(maxPlacedAnswer)
	if !s.fwd.toLeader(ans, r, hopBatch) {
		r.Header.Del(api.HeaderPlaceOnly)
		return s.deployHere(w, r, p) // this peer leads now
	}
	if ans.Code() != http.StatusAccepted {
		ans.CopyTo(w)
		return nil
	}
	var placed api.PlacedDeploy
	if err := json.Unmarshal(ans.Body(), &placed); err != nil || placed.Name == "" || placed.UID == 0 {
		return errorf(http.StatusBadGateway, api.ReasonInternalError, "the leader's answer to a deploy is not a placed VM: %v", err)
	}
	run := s.deployRunner()
	vm := raftfsm.VM{Namespace: placed.Namespace, Name: placed.Name, UID: placed.UID}
	timeout := time.Duration(placed.TimeoutMillis) * time.Millisecond
	start := time.Now()
	if err := s.waitPlaced(r.Context(), ans.Header(), timeout); err != nil {
		return s.answerDeploy(w, vm, nil, run.Abandon(r.Context(), vm, err))
	}
	if !waitsForRunning(r) {
		got, ok := s.replica.FSM().VM(vm.Namespace, vm.Name)
		if !ok || got.UID != vm.UID {
			return notFound("vm %q was deleted as soon as it was placed", vm.Name)
		}
		return s.answerDeploy(w, got, placed.PortWarnings, nil)
	}
	got, err := run.Await(r.Context(), vm, timeout-time.Since(start))
	return s.answerDeploy(w, got, placed.PortWarnings, err)
}

// waitPlaced waits, at most timeout, until this peer's replica has the
// index the leader answered a placement with.
func (s *vmsAPI) waitPlaced(ctx context.Context, h http.Header, timeout time.Duration) error {
	idx, err := strconv.ParseUint(h.Get(api.HeaderIndex), 10, 64)
	if err != nil {
		return fmt.Errorf("the leader's answer to a deploy carries no index: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.replica.FSM().WaitIndex(wctx, idx); err != nil {
		return raftfsm.NewRuleError(raftfsm.ErrTimeout, fmt.Sprintf("peer %s's replica did not reach the deploy's placement (index %d) in time: %v", s.replica.Name(), idx, err))
	}
	return nil
}

// deployRunner places deploys (on the leader) and waits for their VMs on
// this peer's replica; a failed deploy's VM is removed only while it has
// not run, which any peer may propose for the deploys it waits on.
func (s *vmsAPI) deployRunner() deploy.Runner {
	return deploy.Runner{
		Placer: s.placer, Replica: s.replica.FSM(), WriteTimeout: s.cfg.WriteTimeout, Log: s.log,
		Remove: func(ctx context.Context, vm raftfsm.VM) error {
			return s.raft.Propose(ctx, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: vm.Namespace, Name: vm.Name, UID: vm.UID, Unrun: true})
		},
	}
}

// answerDeploy writes a deploy's answer: 201 and the running VM, or err.
func (s *vmsAPI) answerDeploy(w http.ResponseWriter, vm raftfsm.VM, warnings []string, err error) error {
	if errors.Is(err, deploy.ErrStartFailed) {
		return errorf(http.StatusInternalServerError, api.ReasonInternalError, "%s", err)
	}
	if err != nil {
		return err
	}
	out := s.vmToAPI(vm)
	if warnings != nil {
		out.PortWarnings = warnings
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}
