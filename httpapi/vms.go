package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// vmsAPI serves VMs: list, get, deploy, exec actions, extend, commit and save.
type vmsAPI struct {
	*core
	placer     Placer
	registries Registries
	fwd        *forwarder
}

func (s *vmsAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	srv.handle(Route{Method: get, Path: ns + "/vms", Rule: RuleMember}, s.listVMs)
	// A follower has the leader place a deploy, then waits on its own replica (deploy.go).
	srv.handle(Route{Method: post, Path: ns + "/vms", Rule: RuleMember, Write: true, Target: Here}, s.deployVM)
	srv.handle(Route{Method: get, Path: ns + "/vms/:vm", Rule: RuleMember}, s.getVM)
	srv.handle(Route{Method: del, Path: ns + "/vms/:vm", Rule: RuleMember, PoolVM: true, Write: true, Target: Leader},
		s.deleter(raftfsm.TypeVMDelete, "vm", func(ns, name string) any { return raftfsm.VMDelete{Namespace: ns, Name: name} }))
	srv.handle(Route{Method: post, Path: ns + "/vms/:vm/exec", Rule: RuleMember, PoolVM: true, Write: true, Target: Leader}, s.execVM)
	srv.handle(Route{Method: post, Path: ns + "/vms/:vm/extend", Rule: RuleMember, PoolVM: true, Write: true, Target: Leader}, s.extendVM)
	srv.handle(Route{Method: post, Path: ns + "/vms/:vm/commit", Rule: RuleMember, PoolVM: true, Write: true, Target: Leader}, s.commitVM)
	srv.handle(Route{Method: post, Path: ns + "/vms/:vm/save", Rule: RuleMember, PoolVM: true, Write: true, Target: Leader}, s.saveVM)
}

// execTimeout bounds the wait for an exec action to take effect.
const execTimeout = 3 * time.Minute

func (s *vmsAPI) listVMs(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	if wantsWatch(r) {
		return s.serveWatch(w, r, watchVMs, ns)
	}
	items := []api.VM{}
	for _, vm := range s.replica.FSM().VMs(ns) {
		items = append(items, s.vmToAPI(vm))
	}
	writeJSON(w, http.StatusOK, api.List[api.VM]{Items: items})
	return nil
}

func (s *vmsAPI) getVM(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	vm, err := s.vmOf(p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.vmToAPI(vm))
	return nil
}

// vmOf is the VM a route's path names (404 for none; a missing namespace
// as requireNamespace answers it).
func (s *core) vmOf(p httprouter.Params) (raftfsm.VM, error) {
	ns, name := p.ByName("namespace"), p.ByName("vm")
	if err := s.requireNamespace(ns); err != nil {
		return raftfsm.VM{}, err
	}
	vm, ok := s.replica.FSM().VM(ns, name)
	if !ok {
		return raftfsm.VM{}, notFound("vm %q not found in namespace %q", name, ns)
	}
	return vm, nil
}

func (s *vmsAPI) execVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("vm")
	var req api.ExecRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	switch req.Action {
	case raftfsm.ActionStart, raftfsm.ActionStop, raftfsm.ActionSuspend, raftfsm.ActionResume, raftfsm.ActionRevert:
	default:
		return badRequest("field \"action\": %q is not one of start, stop, suspend, resume, revert", req.Action)
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	v, err := s.apply(r.Context(), raftfsm.TypeVMAction, raftfsm.VMAction{Namespace: ns, Name: name, Action: req.Action})
	if err != nil {
		return err
	}
	after, _ := v.(*raftfsm.VM)
	want := map[string]string{
		raftfsm.ActionStart: raftfsm.VMRunning, raftfsm.ActionResume: raftfsm.VMRunning, raftfsm.ActionRevert: raftfsm.VMRunning,
		raftfsm.ActionStop: raftfsm.VMStopped, raftfsm.ActionSuspend: raftfsm.VMSuspended,
	}[req.Action]
	wctx, cancel := context.WithTimeout(r.Context(), execTimeout)
	defer cancel()
	vm, err := raftfsm.WaitVM(wctx, s.replica.FSM(), ns, name, 0, func(vm raftfsm.VM) (bool, error) {
		if vm.Status == raftfsm.VMFailed {
			return false, errorf(http.StatusInternalServerError, api.ReasonInternalError, "vm %q failed: %s", name, vm.ErrorMessage)
		}
		if after != nil && vm.ObservedRevertGen < after.RevertGen {
			return false, nil
		}
		return vm.Status == want, nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.vmToAPI(vm))
	return nil
}
