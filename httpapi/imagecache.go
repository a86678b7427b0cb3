package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"sort"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// cacheImage starts a job copying an image to the nodes a request selects
// (202 with the job).
func (s *imagesAPI) cacheImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("image")
	var req api.ImageCacheRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	selectors := 0
	for _, given := range []bool{req.Nodes != nil, req.Tags != nil, req.All} {
		if given {
			selectors++
		}
	}
	switch {
	case selectors != 1:
		return badRequest("give exactly one of \"nodes\", \"tags\" or \"all\": true")
	case len(req.Nodes) > api.MaxCacheNodes:
		return badRequest("field \"nodes\": %d nodes, at most %d", len(req.Nodes), api.MaxCacheNodes)
	case len(req.Tags) > api.MaxCacheTags:
		return badRequest("field \"tags\": %d tags, at most %d", len(req.Tags), api.MaxCacheTags)
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	img, err := s.cacheableImage(ns, name)
	if err != nil {
		return err
	}
	targets, err := s.selectNodes(ns, req)
	if err != nil {
		return err
	}
	j := raftfsm.Job{Namespace: ns, Type: raftfsm.JobCache, Image: img.Name, Owner: owner(r.Context())}
	for _, n := range targets {
		j.Targets = append(j.Targets, raftfsm.JobTarget{Node: n})
	}
	job, err := s.jobs.CreateJob(r.Context(), j)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, api.JobAccepted{JobName: job.Name, StatusURL: "/api/v1/namespaces/" + ns + "/jobs/" + job.Name})
	return nil
}

// cacheableImage returns the namespace's image name, refusing one with no
// content yet (409).
func (s *imagesAPI) cacheableImage(ns, name string) (raftfsm.Image, error) {
	img, ok := s.replica.FSM().Image(ns, name)
	if !ok {
		return img, notFound("image %q not found in namespace %q", name, ns)
	}
	if !img.Usable() {
		return img, errorf(http.StatusConflict, api.ReasonConflict, "image %q has no content yet (%s)", name, stateOf(img))
	}
	return img, nil
}

// selectNodes resolves a cache request's selection to the namespace's
// nodes, sorted: a node it does not have is 404, a tag no node carries and
// an empty selection 400.
func (s *imagesAPI) selectNodes(ns string, req api.ImageCacheRequest) ([]string, error) {
	var mine []raftfsm.NodeView
	for _, n := range s.replica.FSM().Nodes() {
		if n.Namespace == ns {
			mine = append(mine, n)
		}
	}
	picked := map[string]bool{}
	switch {
	case req.All:
		for _, n := range mine {
			picked[n.Name] = true
		}
	case req.Nodes != nil:
		for _, name := range req.Nodes {
			if !slices.ContainsFunc(mine, func(n raftfsm.NodeView) bool { return n.Name == name }) {
				return nil, notFound("node %q not found in namespace %q", name, ns)
			}
			picked[name] = true
		}
	default:
		for _, tag := range req.Tags {
			found := false
			for _, n := range mine {
				if slices.Contains(n.Tags, tag) {
					picked[n.Name], found = true, true
				}
			}
			if !found {
				return nil, badRequest("field \"tags\": no node of namespace %q carries tag %q", ns, tag)
			}
		}
	}
	if len(picked) == 0 {
		return nil, badRequest("the selection names no node")
	}
	out := make([]string, 0, len(picked))
	for n := range picked {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// imageCache lists the namespace's nodes that hold an image and the
// copies to nodes under way.
func (s *imagesAPI) imageCache(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("image")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	img, ok := s.replica.FSM().Image(ns, name)
	if !ok {
		return notFound("image %q not found in namespace %q", name, ns)
	}
	writeJSON(w, http.StatusOK, s.cacheRecord(ns, img))
	return nil
}

func (s *imagesAPI) cacheRecord(ns string, img raftfsm.Image) api.ImageCache {
	fsm := s.replica.FSM()
	out := api.ImageCache{Image: img.Name, Digest: img.Digest, Nodes: []string{}, Copies: []api.CacheCopy{}}
	if b, ok := fsm.Blob(img.Digest); ok && img.Digest != "" {
		for _, h := range b.Holders {
			if n, ok := fsm.Node(h); ok && n.Namespace == ns {
				out.Nodes = append(out.Nodes, h)
			}
		}
	}
	sort.Strings(out.Nodes)
	for _, j := range fsm.Jobs(ns) {
		if j.Type != raftfsm.JobCache || j.Image != img.Name || j.Ended() {
			continue
		}
		for _, t := range j.Targets {
			if !t.Ended() {
				out.Copies = append(out.Copies, api.CacheCopy{Job: j.Name, Node: t.Node, State: t.State, BytesDone: t.BytesDone, BytesTotal: t.BytesTotal})
			}
		}
	}
	return out
}

// uncacheImage frees an image on a node (?node=N): 409 while a VM there
// uses it, or when the node holds the cluster's only copy.
func (s *imagesAPI) uncacheImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name, node := p.ByName("namespace"), p.ByName("image"), r.URL.Query().Get("node")
	if node == "" {
		return badRequest("query parameter \"node\" is required: the node to free the image on")
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	fsm := s.replica.FSM()
	if n, ok := fsm.Node(node); !ok || n.Namespace != ns {
		return notFound("node %q not found in namespace %q", node, ns)
	}
	img, err := s.cacheableImage(ns, name)
	if err != nil {
		return err
	}
	b, _ := fsm.Blob(img.Digest)
	if !slices.Contains(b.Holders, node) {
		return notFound("node %q does not hold image %q", node, name)
	}
	if len(b.Holders) == 1 {
		return errorf(http.StatusConflict, api.ReasonConflict, "node %q holds the cluster's only copy of image %q: delete the image instead", node, name)
	}
	var users []string
	for _, vm := range fsm.VMsOnNode(node) {
		if vm.ImageDigest == img.Digest || (img.NVRAMDigest != "" && vm.NVRAMDigest == img.NVRAMDigest) {
			who := "a VM of another namespace"
			if vm.Namespace == ns {
				who = "vm " + vm.Name
			}
			users = append(users, who)
		}
	}
	if len(users) > 0 {
		return errorf(http.StatusConflict, api.ReasonConflict, "image %q is in use on node %q (%s): delete those VMs first", name, node, joinMax(users, 5))
	}
	for _, d := range []string{img.Digest, img.NVRAMDigest} {
		if d == "" {
			continue
		}
		if _, err := s.apply(r.Context(), raftfsm.TypeBlobDropHolder, raftfsm.BlobDropHolder{Digest: d, Node: node}); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, s.cacheRecord(ns, img))
	return nil
}

// joinMax joins the first n of items, saying how many more there are.
func joinMax(items []string, n int) string {
	if len(items) <= n {
		return fmt.Sprint(items)
	}
	return fmt.Sprintf("%v and %d more", items[:n], len(items)-n)
}
