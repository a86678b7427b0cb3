package kube

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svc-project/svc/api"
)

// The API groups the door serves its resources in: Orka's, for its tools,
// and svc's own, the same resources.
const (
	OrkaGroup = "orka.macstadium.com"
	SvcGroup  = "svc-project.io"
	Version   = "v1"
)

// Config is what the door needs of its peer.
type Config struct {
	// Inner serves /api/v1 (the peer's own routes, with their rules).
	Inner http.Handler
	// Alias returns the default namespace's other name ("": none).
	Alias func() string
	// Index is the peer's replica's applied Raft index: the
	// resourceVersion of a read that is not a watch's.
	Index func() uint64
	// Version is svc's version, for /version.
	Version string
	Log     *slog.Logger
}

// Door serves the Kubernetes-shaped paths.
type Door struct {
	cfg       Config
	resources []*resource
	rendered  *renderCache // watch events as the door sends them
	// openAPI returns the OpenAPI documents, made at their first call.
	openAPI func() (*openAPI, error)
}

// New returns the door.
func New(cfg Config) *Door {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	d := &Door{cfg: cfg, resources: []*resource{vmiResource(), imageResource(), vmConfigResource(), nodeResource()}, rendered: newRenderCache()}
	d.openAPI = sync.OnceValues(func() (*openAPI, error) { return buildOpenAPI(d.resources) })
	return d
}

// Route is a path (an httprouter pattern) and method the door answers;
// its caller routes each to ServeHTTP. Open routes need no token.
type Route struct {
	Method, Path string
	Open         bool
}

// Routes are the door's routes: discovery, the groups' namespaced
// resources and the core group's pods.
func Routes() []Route {
	const res = "/apis/:group/:version/namespaces/:namespace/:resource"
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	return []Route{
		{Method: get, Path: "/version", Open: true},
		{Method: get, Path: "/openapi/v2"}, {Method: get, Path: "/openapi/v3"}, {Method: get, Path: "/openapi/v3/*rest"},
		{Method: get, Path: "/api"}, {Method: get, Path: "/api/v1"},
		{Method: get, Path: "/apis"}, {Method: get, Path: "/apis/:group"}, {Method: get, Path: "/apis/:group/:version"},
		{Method: get, Path: res}, {Method: post, Path: res},
		{Method: get, Path: res + "/:name"}, {Method: del, Path: res + "/:name"},
		{Method: get, Path: "/api/v1/namespaces/:namespace/pods"}, {Method: get, Path: "/api/v1/namespaces/:namespace/pods/:name"},
	}
}

// ServeHTTP answers one of Routes.
func (d *Door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.URL.Path == "/version":
		d.only(w, r, func() { d.version(w) })
	case strings.HasPrefix(r.URL.Path, "/openapi/"):
		d.only(w, r, func() { d.serveOpenAPI(w, r) })
	case r.URL.Path == "/api":
		d.only(w, r, func() { d.coreVersions(w, r) })
	case r.URL.Path == "/api/v1":
		d.only(w, r, func() { writeJSON(w, http.StatusOK, coreResources()) })
	case parts[0] == "api" && len(parts) >= 5 && parts[4] == "pods":
		d.serveResource(w, r, podResource(), "v1", parts[3], parts[5:])
	case r.URL.Path == "/apis":
		d.only(w, r, func() { writeJSON(w, http.StatusOK, d.groups()) })
	case len(parts) == 2:
		g, ok := d.group(parts[1])
		if !ok {
			writeStatus(w, notFound("the server could not find the requested resource: API group %q is not served (%s and %s are)", parts[1], OrkaGroup, SvcGroup))
			return
		}
		d.only(w, r, func() { writeJSON(w, http.StatusOK, g) })
	default:
		d.serveGroup(w, r, parts[1:])
	}
}

// only answers GET (and HEAD) with serve, any other method 405.
func (d *Door) only(w http.ResponseWriter, r *http.Request, serve func()) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeStatus(w, methodNotAllowed(r))
		return
	}
	serve()
}

// serveGroup answers /apis/{group}/{version}[/namespaces/{ns}/{resource}[/{name}]].
func (d *Door) serveGroup(w http.ResponseWriter, r *http.Request, parts []string) {
	group, version := parts[0], parts[1]
	if _, ok := d.group(group); !ok || version != Version {
		writeStatus(w, notFound("the server could not find the requested resource: %s/%s is not served (%s/%s and %s/%s are)", group, version, OrkaGroup, Version, SvcGroup, Version))
		return
	}
	gv := group + "/" + version
	rest := parts[2:]
	if len(rest) == 0 {
		d.only(w, r, func() { writeJSON(w, http.StatusOK, d.resourceList(gv)) })
		return
	}
	if rest[0] != "namespaces" || len(rest) < 3 {
		if res := d.resource(rest[0]); res != nil && len(rest) == 1 {
			writeStatus(w, badRequest("%s are listed one namespace at a time: GET /apis/%s/namespaces/NAMESPACE/%s", res.plural, gv, res.plural))
			return
		}
		writeStatus(w, notFound("the server could not find the requested resource %s", r.URL.Path))
		return
	}
	res := d.resource(rest[2])
	if res == nil {
		writeStatus(w, notFound("the server could not find the requested resource: %q is not a resource of %s (its resources: %s)", rest[2], gv, strings.Join(d.plurals(), ", ")))
		return
	}
	d.serveResource(w, r, res, gv, rest[1], rest[3:])
}

func (d *Door) resource(plural string) *resource {
	for _, res := range d.resources {
		if res.plural == plural {
			return res
		}
	}
	return nil
}

func (d *Door) plurals() []string {
	out := make([]string, 0, len(d.resources))
	for _, res := range d.resources {
		out = append(out, res.plural)
	}
	return out
}

// serveResource answers a namespace's collection (rest empty) or one of
// its objects (rest: its name).
func (d *Door) serveResource(w http.ResponseWriter, r *http.Request, res *resource, gv, ns string, rest []string) {
	c := &call{d: d, w: w, r: r, res: res, gv: gv, ns: ns}
	switch {
	case len(rest) == 0 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		c.list()
	case len(rest) == 0 && r.Method == http.MethodPost && res.create != nil:
		c.create()
	case len(rest) == 1 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		c.get(rest[0])
	case len(rest) == 1 && r.Method == http.MethodDelete && res.deletes:
		c.delete(rest[0])
	case len(rest) > 1:
		writeStatus(w, notFound("the server could not find the requested resource %s (no subresource of %s is served)", r.URL.Path, res.plural))
	default:
		writeStatus(w, methodNotAllowed(r))
	}
}

// version answers /version as a Kubernetes API server does.
func (d *Door) version(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, map[string]string{
		"major": "1", "minor": "33", "gitVersion": "v1.33.0-svc." + strings.TrimPrefix(d.cfg.Version, "v"),
		"platform": "linux/amd64", "goVersion": "", "compiler": "gc", "buildDate": "", "gitCommit": "", "gitTreeState": "",
	})
}

// coreVersions answers /api: the core group's one version.
func (d *Door) coreVersions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host}},
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeStatus answers a failure Status.
func writeStatus(w http.ResponseWriter, st api.Status) {
	writeJSON(w, st.Code, st)
}

func notFound(format string, args ...any) api.Status {
	return api.NewStatus(http.StatusNotFound, api.ReasonNotFound, sprintf(format, args...))
}

func badRequest(format string, args ...any) api.Status {
	return api.NewStatus(http.StatusBadRequest, api.ReasonBadRequest, sprintf(format, args...))
}

func methodNotAllowed(r *http.Request) api.Status {
	return api.NewStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", sprintf("the server does not allow this method on the requested resource: %s %s", r.Method, r.URL.Path))
}
