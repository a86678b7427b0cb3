package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// Operating a cluster: cordoning nodes, namespace quotas, VM expiry.

// cordonNode takes a node out of placement (cordoned true) or puts it back.
func (s *nodesAPI) cordonNode(cordoned bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		ns, name := p.ByName("namespace"), p.ByName("name")
		if err := s.requireNamespace(ns); err != nil {
			return err
		}
		if _, err := s.apply(r.Context(), raftfsm.TypeNodeCordon, raftfsm.NodeCordon{Namespace: ns, Name: name, Cordoned: cordoned}); err != nil {
			return err
		}
		n, ok := s.replica.FSM().Node(name)
		if !ok {
			return notFound("node %q not found", name)
		}
		s.log.Info("node cordon", "node", name, "cordoned", cordoned, "by", owner(r.Context()))
		writeJSON(w, http.StatusOK, s.nodeRecord(n, s.replica.FSM().Images(ns)))
		return nil
	}
}

// namespaceQuota is a namespace's quota and use as answers show them.
func (s *core) namespaceQuota(ns raftfsm.Namespace) api.NamespaceQuota {
	u := s.replica.FSM().QuotaUse(ns.Name)
	out := api.NamespaceQuota{Namespace: ns.Name, Used: api.Quota{CPU: u.CPU, Memory: gibOf(u.MemoryBytes), VMs: u.VMs, Disk: gibOf(u.DiskBytes)},
		PooledDisk: gibOf(u.PooledDiskBytes)}
	if q := ns.Quota; q != nil {
		out.Quota = &api.Quota{CPU: q.CPU, Memory: gibOf(q.MemoryBytes), VMs: q.VMs, Disk: gibOf(q.DiskBytes)}
	}
	return out
}

func gibOf(b int64) float64 { return math.Round(float64(b)/(1<<30)*1000) / 1000 }

func (s *tenancyAPI) getQuota(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns, ok := s.replica.FSM().Namespace(p.ByName("namespace"))
	if !ok {
		return notFound("namespace %q not found", p.ByName("namespace"))
	}
	writeJSON(w, http.StatusOK, s.namespaceQuota(ns))
	return nil
}

// maxQuotaCPU and maxQuotaMemory bound a quota's fields (what no cluster
// reaches: a typo, not a plan).
const (
	maxQuotaCPU    = 1 << 20
	maxQuotaMemory = 1 << 30 // GiB
	maxQuotaVMs    = 1 << 20
	maxQuotaDisk   = 1 << 30 // GiB
)

func (s *tenancyAPI) setQuota(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.Quota
	if err := decodeJSONStrict(w, r, &req); err != nil {
		return err
	}
	switch {
	case req.CPU < 0 || req.CPU > maxQuotaCPU:
		return badRequest("field \"cpu\": %d is out of range (0, no bound, to %d)", req.CPU, maxQuotaCPU)
	case req.Memory < 0 || req.Memory > maxQuotaMemory || math.IsNaN(req.Memory):
		return badRequest("field \"memory\": %g GiB is out of range (0, no bound, to %d)", req.Memory, maxQuotaMemory)
	case req.VMs < 0 || req.VMs > maxQuotaVMs:
		return badRequest("field \"vms\": %d is out of range (0, no bound, to %d)", req.VMs, maxQuotaVMs)
	case req.Disk < 0 || req.Disk > maxQuotaDisk || math.IsNaN(req.Disk):
		return badRequest("field \"disk\": %g GiB is out of range (0, no bound, to %d)", req.Disk, maxQuotaDisk)
	}
	name := p.ByName("namespace")
	if err := s.requireNamespace(name); err != nil {
		return err
	}
	q := &raftfsm.Quota{CPU: req.CPU, MemoryBytes: int64(req.Memory * (1 << 30)), VMs: req.VMs, DiskBytes: int64(req.Disk * (1 << 30))}
	if *q == (raftfsm.Quota{}) {
		q = nil
	}
	if _, err := s.apply(r.Context(), raftfsm.TypeNamespaceQuota, raftfsm.NamespaceQuotaSet{Namespace: name, Quota: q}); err != nil {
		return err
	}
	ns, _ := s.replica.FSM().Namespace(name)
	s.log.Info("namespace quota set", "namespace", name, "cpu", req.CPU, "memoryGiB", req.Memory, "vms", req.VMs, "diskGiB", req.Disk, "by", owner(r.Context()))
	writeJSON(w, http.StatusOK, s.namespaceQuota(ns))
	return nil
}

// extendVM moves a VM's expiry later.
func (s *vmsAPI) extendVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.ExtendRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	d, err := api.ParseTTL(req.By)
	if err != nil {
		return badRequest("field \"by\": %s", err)
	}
	ns, name := p.ByName("namespace"), p.ByName("vm")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	v, err := s.apply(r.Context(), raftfsm.TypeVMExtend, raftfsm.VMExtend{Namespace: ns, Name: name, Seconds: int64(d / time.Second), Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	vm, ok := v.(*raftfsm.VM)
	if !ok {
		return errorf(http.StatusInternalServerError, api.ReasonInternalError, "the extension answered %T", v)
	}
	writeJSON(w, http.StatusOK, s.vmToAPI(*vm))
	return nil
}
