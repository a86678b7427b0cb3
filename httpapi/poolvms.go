package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/node/runnerpool"
)

// A runner pool's VMs are the pool's: each holds its runner's just-in-time
// configuration (whoever reads it can take the job, and the job's secrets),
// and runs a job someone else queued. Members of the namespace see them
// (the VM list, the pool's view); only an admin, or the pool's own service
// account, may act in or on one: run, console, port-forward, exec, extend,
// resize, commit, save, push, delete.

// poolMember reports whether pr may act on a VM of pool in namespace ns.
func poolMember(pr auth.Principal, ns, pool string) bool {
	return pr.IsAdmin() || pr.Kind == auth.KindServiceAccount && pr.Namespace == ns && pr.Name == runnerpool.ServiceAccount(pool)
}

// guardPoolVM refuses a call on a pool's VM (the route's :vm) to anyone
// but an admin or the pool; a VM that does not exist is the handler's to
// answer.
func (s *Server) guardPoolVM(pr auth.Principal, p httprouter.Params) error {
	ns := p.ByName("namespace")
	vm, ok := s.replica.FSM().VM(ns, p.ByName("vm"))
	if !ok {
		return nil
	}
	pool := vm.CustomMetadata[runnerpool.MetaPool]
	if pool == "" || poolMember(pr, ns, pool) {
		return nil
	}
	return errorf(http.StatusForbidden, api.ReasonForbidden, "VM %q is runner pool %q's: it holds its runner's configuration and runs a queued job; only an admin or the pool may run commands in it, open its console, forward its ports, change, save or delete it", vm.Name, pool)
}

// guardPoolMetadata refuses a deploy that would mark its VM as a pool's
// (runnerpool.MetaPool, MetaJob) by anyone but an admin or that pool.
func guardPoolMetadata(pr auth.Principal, ns string, meta map[string]string) error {
	pool, marked := meta[runnerpool.MetaPool]
	_, job := meta[runnerpool.MetaJob]
	if !marked && !job || marked && poolMember(pr, ns, pool) {
		return nil
	}
	return errorf(http.StatusForbidden, api.ReasonForbidden, "custom metadata %q and %q are set by runner pools on their own VMs", runnerpool.MetaPool, runnerpool.MetaJob)
}
