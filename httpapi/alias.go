package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
)

// ValidNamespaceAlias checks an alias of the default namespace: a name a
// namespace could have, other than the default's own.
func ValidNamespaceAlias(alias string) error {
	if alias == "" {
		return nil
	}
	if err := api.ValidateName("namespace alias", alias, api.MaxNameLen); err != nil {
		return err
	}
	if alias == api.DefaultNamespace {
		return fmt.Errorf("namespace alias %q is the default namespace's own name", alias)
	}
	return nil
}

// alias is the default namespace's other name, "" when there is none: not
// configured, or a namespace of that very name exists (made before the
// alias was: an upgrade). Such a namespace stays reachable by its name,
// and the alias is off until it is gone (the peer says so at its start,
// AliasTaken).
func (s *core) alias() string {
	a := s.cfg.NamespaceAlias
	if a == "" {
		return ""
	}
	if _, taken := s.replica.FSM().Namespace(a); taken {
		return ""
	}
	return a
}

// AliasTaken says, when a namespace has the configured alias's name, that
// the alias is off and what an admin does about it ("" when it is not).
func (s *Server) AliasTaken() string {
	a := s.cfg.NamespaceAlias
	if a == "" || s.alias() != "" {
		return ""
	}
	return fmt.Sprintf("a namespace named %q exists, so %q is not another name of %s on this cluster: that namespace is reached by its own name. "+
		"To use the alias, move what the namespace holds elsewhere and delete it (svc namespace delete %s); or start the agents with --namespace-alias=\"\" (no alias) or another name",
		a, a, api.DefaultNamespace, a)
}

// unalias makes a path that names the default namespace by its alias name
// it by its own, in the route's parameters and (unless keepPath) in the URL
// a forwarded request carries: rules, records and the leader see one
// namespace. The Kubernetes door keeps the path as its caller sent it: its
// objects carry the namespace the caller named (kubectl refuses a list
// whose items name another), and each /api/v1 call it makes is unaliased.
func (s *Server) unalias(r *http.Request, p httprouter.Params, keepPath bool) {
	alias := s.alias()
	if alias == "" {
		return
	}
	for i := range p {
		if p[i].Key != "namespace" || p[i].Value != alias {
			continue
		}
		p[i].Value = api.DefaultNamespace
		if keepPath {
			continue
		}
		r.URL.Path = strings.Replace(r.URL.Path, "/namespaces/"+alias, "/namespaces/"+api.DefaultNamespace, 1)
		r.URL.RawPath = ""
	}
}

// canonicalSubject names a service account ("namespace:name") of the
// default namespace by the namespace's own name when it names it by its
// alias; any other subject as it is. Every rule and record sees one name.
func (s *core) canonicalSubject(ref string) string {
	if ns, name, ok := strings.Cut(ref, ":"); ok && s.isAlias(ns) {
		return api.DefaultNamespace + ":" + name
	}
	return ref
}

// canonicalSubjects is canonicalSubject of each of refs (a new slice).
func (s *core) canonicalSubjects(refs []string) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = s.canonicalSubject(r)
	}
	return out
}

// isAlias reports whether name is the default namespace's alias.
func (s *core) isAlias(name string) bool {
	a := s.alias()
	return a != "" && name == a
}
