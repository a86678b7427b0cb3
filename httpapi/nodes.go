package httpapi

import (
	"net/http"
	"slices"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

func (s *Server) requireNamespace(ns string) error {
	if _, ok := s.replica.FSM().Namespace(ns); !ok {
		return notFound("namespace %q not found", ns)
	}
	return nil
}

func (s *Server) listNodes(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	if wantsWatch(r) {
		return s.serveWatch(w, r, watchNodes, ns)
	}
	items := []api.Node{}
	images := s.replica.FSM().Images(ns)
	for _, n := range s.replica.FSM().Nodes() {
		if n.Namespace == ns {
			items = append(items, s.nodeRecord(n, images))
		}
	}
	writeJSON(w, http.StatusOK, api.List[api.Node]{Items: items})
	return nil
}

// nodeRecord is a node as every answer shows it: with the images of the
// namespace (images) whose content it holds.
func (s *Server) nodeRecord(n raftfsm.NodeView, images []raftfsm.Image) api.Node {
	rec := nodeToAPI(n)
	rec.CachedImages = s.cachedImages(n.Name, images)
	if p, ok := s.replica.FSM().PeerIdentity(n.Name); ok {
		rec.Pending = p.Pending
	}
	return rec
}

// cachedImages names the images whose content node holds.
func (s *Server) cachedImages(node string, images []raftfsm.Image) []string {
	out := []string{}
	for _, img := range images {
		if b, ok := s.replica.FSM().Blob(img.Digest); ok && slices.Contains(b.Holders, node) {
			out = append(out, img.Name)
		}
	}
	return out
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
		if _, err := s.apply(r.Context(), t, raftfsm.NodeTag{Namespace: ns, Name: name, Tag: req.Tag}); err != nil {
			return err
		}
		n, ok := s.replica.FSM().Node(name)
		if !ok {
			return notFound("node %q not found", name)
		}
		writeJSON(w, http.StatusOK, s.nodeRecord(n, s.replica.FSM().Images(ns)))
		return nil
	}
}

func (s *Server) clusterInfo(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	writeJSON(w, http.StatusOK, s.peers.ClusterInfo(r.Context()))
	return nil
}
