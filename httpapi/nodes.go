package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// NodeToAPI converts a node of the replicated state to its API record.
func NodeToAPI(n raftfsm.NodeView) api.Node {
	avail := func(total, used int) int { return max(total-used, 0) }
	return api.Node{
		Name:              n.Name,
		Namespace:         n.Namespace,
		NodeIP:            n.Addr,
		AvailableCPU:      avail(n.Capacity.CPU, n.Used.CPU),
		AvailableMemory:   FormatDecimalG(max(n.Capacity.MemoryBytes-n.Used.MemoryBytes, 0)),
		AvailableGPU:      avail(n.Capacity.GPU, n.Used.GPU),
		AllocatableCPU:    n.Capacity.CPU,
		AllocatableMemory: FormatDecimalG(n.Capacity.MemoryBytes),
		AllocatableGPU:    n.Capacity.GPU,
		NodeType:          api.NodeTypeWorker,
		Phase:             n.Phase,
		Tags:              append([]string{}, n.Tags...),
		Arch:              n.Arch,
		CPUOvercommit:     max(n.CPUOvercommit, 1),
	}
}

// FormatDecimalG formats bytes as decimal gigabytes with two decimals ("128.00G").
func FormatDecimalG(bytes int64) string {
	return fmt.Sprintf("%.2fG", float64(bytes)/1e9)
}

func (s *Server) requireNamespace(ns string) error {
	if _, ok := s.b.FSM().Namespace(ns); !ok {
		return notFound("namespace %q not found", ns)
	}
	return nil
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	items := []api.Node{}
	for _, n := range s.b.FSM().Nodes() {
		if n.Namespace == ns {
			items = append(items, NodeToAPI(n))
		}
	}
	writeJSON(w, http.StatusOK, api.List[api.Node]{Items: items})
	return nil
}

func (s *Server) tagNode(t raftfsm.Type) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		ns, name := p.ByName("namespace"), p.ByName("name")
		var req api.TagRequest
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
		if err := api.ValidateTag(req.Tag); err != nil {
			return badRequest("field \"tag\": %s", err.Error())
		}
		if err := s.requireNamespace(ns); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
		defer cancel()
		if _, err := s.b.Apply(ctx, t, raftfsm.NodeTag{Namespace: ns, Name: name, Tag: req.Tag}); err != nil {
			return err
		}
		n, ok := s.b.FSM().Node(name)
		if !ok {
			return notFound("node %q not found", name)
		}
		writeJSON(w, http.StatusOK, NodeToAPI(n))
		return nil
	}
}

func (s *Server) clusterInfo(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	writeJSON(w, http.StatusOK, s.b.ClusterInfo(r.Context()))
	return nil
}
