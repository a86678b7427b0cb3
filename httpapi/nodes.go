package httpapi

import (
	"net/http"
	"slices"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// nodesAPI serves the nodes as a namespace sees them: list, tags, cordon; the cluster's info.
type nodesAPI struct {
	*core
	peers Peers
}

func (s *nodesAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	srv.handle(Route{Method: http.MethodGet, Path: "/api/v1/cluster-info", Rule: RuleOpen}, s.clusterInfo)
	get, post := http.MethodGet, http.MethodPost
	srv.handle(Route{Method: get, Path: ns + "/nodes", Rule: RuleMember}, s.listNodes)
	srv.handle(Route{Method: post, Path: ns + "/nodes/:name/tag", Rule: RuleAdmin, Write: true, Target: Leader}, s.tagNode(raftfsm.TypeNodeTag))
	srv.handle(Route{Method: post, Path: ns + "/nodes/:name/untag", Rule: RuleAdmin, Write: true, Target: Leader}, s.tagNode(raftfsm.TypeNodeUntag))
	srv.handle(Route{Method: post, Path: ns + "/nodes/:name/cordon", Rule: RuleAdmin, Write: true, Target: Leader}, s.cordonNode(true))
	srv.handle(Route{Method: post, Path: ns + "/nodes/:name/uncordon", Rule: RuleAdmin, Write: true, Target: Leader}, s.cordonNode(false))
}

func (s *core) requireNamespace(ns string) error {
	if _, ok := s.replica.FSM().Namespace(ns); !ok {
		return notFound("namespace %q not found", ns)
	}
	return nil
}

func (s *nodesAPI) listNodes(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
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
func (s *core) nodeRecord(n raftfsm.NodeView, images []raftfsm.Image) api.Node {
	rec := nodeToAPI(n)
	rec.CachedImages = s.cachedImages(n.Name, images)
	if p, ok := s.replica.FSM().PeerIdentity(n.Name); ok {
		rec.Pending = p.Pending
	}
	return rec
}

// cachedImages names the images whose content node holds.
func (s *core) cachedImages(node string, images []raftfsm.Image) []string {
	out := []string{}
	for _, img := range images {
		if b, ok := s.replica.FSM().Blob(img.Digest); ok && slices.Contains(b.Holders, node) {
			out = append(out, img.Name)
		}
	}
	return out
}

func (s *nodesAPI) tagNode(t raftfsm.Type) handler {
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

func (s *nodesAPI) clusterInfo(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	writeJSON(w, http.StatusOK, s.peers.ClusterInfo(r.Context()))
	return nil
}
