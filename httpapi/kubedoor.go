package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/httpapi/kube"
)

// kubeRoutes serves the Kubernetes-shaped door (package kube): discovery
// and Orka's resources, each call made the /api/v1 call that means the
// same, through this server's own routes. The door's routes only check
// that the caller has a token (/version needs none); the /api/v1 call
// applies every rule and is the one audited, so they are Stream routes:
// no audit of their own, and a watch holds its connection.
func (s *Server) kubeRoutes() {
	door := kube.New(kube.Config{
		Inner: s.router, Alias: s.alias, Index: func() uint64 { return s.replica.FSM().Index() },
		Version: s.cfg.Version, Log: s.log.With("door", "kube"),
	})
	serve := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		// The door's routes are Stream routes (a watch holds its
		// connection), which take no body deadline of their own: a body
		// (a create's, DeleteOptions) gets the one every body gets.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.withBodyDeadline(w, r, bodyWhole)
			defer drainBody(w, r)
		}
		door.ServeHTTP(w, r)
		return nil
	}
	for _, rt := range kube.Routes() {
		rule := RuleMember
		if rt.Open {
			rule = RuleOpen
		}
		s.handle(Route{Method: rt.Method, Path: rt.Path, Rule: rule, Stream: true, Door: true}, serve)
	}
}
