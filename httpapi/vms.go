package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// execTimeout bounds the wait for an exec action to take effect.
const execTimeout = 3 * time.Minute

func (s *Server) listVMs(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
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

func (s *Server) getVM(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	vm, err := s.vmOf(p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.vmToAPI(vm))
	return nil
}

// vmOf is the VM a route's path names (404 for none; a missing namespace
// as requireNamespace answers it).
func (s *Server) vmOf(p httprouter.Params) (raftfsm.VM, error) {
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

func (s *Server) execVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
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
