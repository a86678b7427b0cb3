package httpapi

import (
	"context"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// sharedStorageAPI serves a namespace's shared storage and its folders on nodes.
type sharedStorageAPI struct {
	*core
	shared SharedFolders
}

func (s *sharedStorageAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	srv.handle(Route{Method: get, Path: ns + "/shared-storage", Rule: RuleMember}, s.getSharedStorage)
	srv.handle(Route{Method: http.MethodPut, Path: ns + "/shared-storage", Rule: RuleAdmin, Write: true, Target: Leader}, s.setSharedStorage)
	srv.handle(Route{Method: del, Path: ns + "/shared-storage", Rule: RuleAdmin, Write: true, Target: Leader}, s.deleteSharedStorage)
	srv.handle(Route{Method: post, Path: ns + "/nodes/:name/shared-storage/clear", Rule: RuleAdmin, Target: NodePeer}, s.clearSharedStorage)
}

// SharedFolders are this peer's namespaces' shared folders
// (node/sharedstore.Keeper).
type SharedFolders interface {
	// Clear empties namespace ns's folder on this node; a rule error (a
	// conflict while VMs use it) says why not.
	Clear(ctx context.Context, ns string) error
}

// sharedStorage is a namespace's shared storage as answers show it: its
// bound and what its folder takes on each node that reported one.
func (s *sharedStorageAPI) sharedStorage(ns raftfsm.Namespace) (api.NamespaceSharedStorage, error) {
	if ns.SharedStorage == nil {
		return api.NamespaceSharedStorage{}, notFound("namespace %q has no shared storage (an admin turns it on: svc namespace shared-storage %s)", ns.Name, ns.Name)
	}
	out := api.NamespaceSharedStorage{Namespace: ns.Name, MaxBytes: ns.SharedStorage.MaxBytes, Nodes: []api.SharedUsage{}}
	for _, n := range s.replica.FSM().Nodes() {
		if b, ok := n.SharedUsage[ns.Name]; ok {
			out.Nodes = append(out.Nodes, api.SharedUsage{Node: n.Name, UsedBytes: b})
		}
	}
	return out, nil
}

func (s *sharedStorageAPI) getSharedStorage(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns, ok := s.replica.FSM().Namespace(p.ByName("namespace"))
	if !ok {
		return notFound("namespace %q not found", p.ByName("namespace"))
	}
	out, err := s.sharedStorage(ns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// setSharedStorage turns a namespace's shared storage on, or changes its
// bound.
func (s *sharedStorageAPI) setSharedStorage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.SharedStorage
	if err := decodeJSONStrict(w, r, &req); err != nil {
		return err
	}
	if req.MaxBytes < raftfsm.MinSharedStorageBytes || req.MaxBytes > raftfsm.MaxSharedStorageBytes {
		return badRequest("field \"maxBytes\": %d is out of range (1 GiB to 16 TiB per node)", req.MaxBytes)
	}
	name := p.ByName("namespace")
	if err := s.requireNamespace(name); err != nil {
		return err
	}
	if _, err := s.apply(r.Context(), raftfsm.TypeNamespaceSharedStorage, raftfsm.NamespaceSharedStorage{Namespace: name, SharedStorage: &raftfsm.SharedStorage{MaxBytes: req.MaxBytes}}); err != nil {
		return err
	}
	ns, _ := s.replica.FSM().Namespace(name)
	s.log.Info("namespace shared storage on", "namespace", name, "maxBytes", req.MaxBytes, "by", owner(r.Context()))
	out, err := s.sharedStorage(ns)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteSharedStorage turns a namespace's shared storage off (refused while
// its VMs use it); the nodes then remove its folders.
func (s *sharedStorageAPI) deleteSharedStorage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	name := p.ByName("namespace")
	if err := s.requireNamespace(name); err != nil {
		return err
	}
	if _, err := s.apply(r.Context(), raftfsm.TypeNamespaceSharedStorage, raftfsm.NamespaceSharedStorage{Namespace: name}); err != nil {
		return err
	}
	s.log.Info("namespace shared storage off", "namespace", name, "by", owner(r.Context()))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// clearSharedStorage empties the namespace's folder on the path's node; it
// runs on that node's peer.
func (s *sharedStorageAPI) clearSharedStorage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("name")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	n, ok := s.replica.FSM().Node(name)
	if !ok || n.Namespace != ns {
		return notFound("node %q not found in namespace %q", name, ns)
	}
	if s.shared == nil {
		return errorf(http.StatusConflict, api.ReasonConflict, "node %s offers no shared storage: %s", name, n.SharedStorageWhy)
	}
	if err := s.shared.Clear(r.Context(), ns); err != nil {
		return err
	}
	s.log.Info("shared folder cleared", "namespace", ns, "node", name, "by", owner(r.Context()))
	n, _ = s.replica.FSM().Node(name)
	writeJSON(w, http.StatusOK, s.nodeRecord(n, s.replica.FSM().Images(ns)))
	return nil
}
