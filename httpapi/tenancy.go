package httpapi

import (
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/raftfsm"
)

// tenancyAPI serves namespaces, their role bindings, service accounts and quotas, and a node's namespace.
type tenancyAPI struct {
	*core
	keys auth.Keys
}

func (s *tenancyAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	srv.handle(Route{Method: get, Path: "/api/v1/namespaces", Rule: RuleAdmin}, s.listNamespaces)
	srv.handle(Route{Method: post, Path: "/api/v1/namespaces", Rule: RuleAdmin, Write: true, Target: Leader}, s.createNamespace)
	srv.handle(Route{Method: get, Path: ns, Rule: RuleAdmin}, s.getNamespace)
	srv.handle(Route{Method: del, Path: ns, Rule: RuleAdmin, Write: true, Target: Leader},
		s.deleter(raftfsm.TypeNamespaceDelete, "namespace", func(_, name string) any { return raftfsm.NamespaceDelete{Name: name} }))
	srv.handle(Route{Method: get, Path: ns + "/rolebindings", Rule: RuleAdmin}, s.listSubjects)
	srv.handle(Route{Method: post, Path: ns + "/rolebindings/add-subject", Rule: RuleAdmin, Write: true, Target: Leader}, s.changeSubjects(true))
	srv.handle(Route{Method: post, Path: ns + "/rolebindings/remove-subject", Rule: RuleAdmin, Write: true, Target: Leader}, s.changeSubjects(false))
	srv.handle(Route{Method: post, Path: ns + "/nodes/:name/namespace", Rule: RuleAdmin, Write: true, Target: Leader}, s.setNodeNamespace)
	srv.handle(Route{Method: get, Path: ns + "/quota", Rule: RuleAdmin}, s.getQuota)
	srv.handle(Route{Method: http.MethodPut, Path: ns + "/quota", Rule: RuleAdmin, Write: true, Target: Leader}, s.setQuota)
	srv.handle(Route{Method: get, Path: ns + "/serviceaccounts", Rule: RuleAdmin}, s.listServiceAccounts)
	srv.handle(Route{Method: post, Path: ns + "/serviceaccounts/:serviceaccount", Rule: RuleAdmin, Write: true, Target: Leader}, s.createServiceAccount)
	srv.handle(Route{Method: del, Path: ns + "/serviceaccounts/:serviceaccount", Rule: RuleAdmin, Write: true, Target: Leader},
		s.deleter(raftfsm.TypeSADelete, "serviceaccount", func(ns, name string) any { return raftfsm.SADelete{Namespace: ns, Name: name} }))
	// Signing needs no write: any peer answers.
	srv.handle(Route{Method: post, Path: ns + "/serviceaccounts/:serviceaccount/token", Rule: RuleAdmin}, s.serviceAccountToken)
}

func (s *tenancyAPI) listNamespaces(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	items := []api.Namespace{}
	for _, ns := range s.replica.FSM().Namespaces() {
		items = append(items, s.namespaceToAPI(ns))
	}
	writeJSON(w, http.StatusOK, api.List[api.Namespace]{Items: items})
	return nil
}

func (s *tenancyAPI) getNamespace(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns, ok := s.replica.FSM().Namespace(p.ByName("namespace"))
	if !ok {
		return notFound("namespace %q not found", p.ByName("namespace"))
	}
	writeJSON(w, http.StatusOK, s.namespaceToAPI(ns))
	return nil
}

func (s *tenancyAPI) createNamespace(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req api.Namespace
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := api.ValidateName("name", req.Name, api.MaxNameLen); err != nil {
		return badRequest("field \"name\": %s", err)
	}
	if s.isAlias(req.Name) {
		return errorf(http.StatusConflict, api.ReasonAlreadyExists, "namespace %q is another name of %s (the agents' --namespace-alias)", req.Name, api.DefaultNamespace)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := s.apply(r.Context(), raftfsm.TypeNamespaceCreate, raftfsm.NamespaceCreate{Name: req.Name, Time: now}); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, api.Namespace{Name: req.Name, CreatedAt: &now})
	return nil
}

func (s *tenancyAPI) listSubjects(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	rb := s.replica.FSM().RoleBinding(ns)
	writeJSON(w, http.StatusOK, subjectsToAPI(&rb))
	return nil
}

func (s *tenancyAPI) changeSubjects(add bool) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		ns := p.ByName("namespace")
		var req api.Subjects
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
		if len(req.Users) == 0 && len(req.ServiceAccounts) == 0 && len(req.Groups) == 0 {
			return badRequest("fields \"users\", \"serviceAccounts\" and \"groups\": name at least one subject")
		}
		if n := len(req.Users) + len(req.ServiceAccounts) + len(req.Groups); n > api.MaxSubjectsPerCall {
			return badRequest("fields \"users\", \"serviceAccounts\" and \"groups\": %d subjects, at most %d in one call", n, api.MaxSubjectsPerCall)
		}
		if err := s.requireNamespace(ns); err != nil {
			return err
		}
		t := raftfsm.TypeRoleBindingDel
		if add {
			t = raftfsm.TypeRoleBindingAdd
		}
		v, err := s.apply(r.Context(), t, raftfsm.RoleBindingChange{Namespace: ns, Users: req.Users, ServiceAccounts: s.canonicalSubjects(req.ServiceAccounts), Groups: req.Groups,
			Time: time.Now().UTC(), Claimable: true})
		if err != nil {
			return err
		}
		rb, _ := v.(*raftfsm.RoleBinding)
		if rb == nil {
			rb = &raftfsm.RoleBinding{}
		}
		writeJSON(w, http.StatusOK, subjectsToAPI(rb))
		return nil
	}
}

func subjectsToAPI(rb *raftfsm.RoleBinding) api.Subjects {
	return api.Subjects{Users: append([]string{}, rb.Users...), ServiceAccounts: append([]string{}, rb.ServiceAccounts...), Groups: append([]string{}, rb.Groups...)}
}

func (s *tenancyAPI) setNodeNamespace(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("name")
	var req api.NodeNamespaceRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := api.ValidateName("namespace", req.Namespace, api.MaxNameLen); err != nil {
		return badRequest("field \"namespace\": %s", err)
	}
	if n, ok := s.replica.FSM().Node(name); !ok || n.Namespace != ns {
		return notFound("node %q not found in namespace %q", name, ns)
	}
	if _, err := s.apply(r.Context(), raftfsm.TypeNodeSetNamespace, raftfsm.NodeSetNamespace{Name: name, Namespace: req.Namespace}); err != nil {
		return err
	}
	n, _ := s.replica.FSM().Node(name)
	writeJSON(w, http.StatusOK, s.nodeRecord(n, s.replica.FSM().Images(n.Namespace)))
	return nil
}

func (s *tenancyAPI) listServiceAccounts(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	items := []api.ServiceAccount{}
	for _, sa := range s.replica.FSM().ServiceAccounts(ns) {
		items = append(items, api.ServiceAccount{Name: sa.Name, Namespace: sa.Namespace, CreatedAt: sa.CreatedAt})
	}
	writeJSON(w, http.StatusOK, api.List[api.ServiceAccount]{Items: items})
	return nil
}

func (s *tenancyAPI) createServiceAccount(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("serviceaccount")
	// The body is empty (or an empty object); anything in it is ignored.
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxJSONBody))
	if err := api.ValidateName("service account", name, api.MaxNameLen); err != nil {
		return badRequest("%s", err)
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	now := time.Now().UTC().Truncate(time.Second)
	if _, err := s.apply(r.Context(), raftfsm.TypeSACreate, raftfsm.SACreate{Namespace: ns, Name: name, Time: now}); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, api.ServiceAccount{Name: name, Namespace: ns, CreatedAt: now})
	return nil
}

func (s *tenancyAPI) serviceAccountToken(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("serviceaccount")
	var req api.TokenRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
	}
	ttl := auth.ServiceAccountTTL
	switch {
	case req.NoExpiration && req.Duration != "":
		return badRequest("fields \"duration\" and \"noExpiration\": give one or the other")
	case req.NoExpiration:
		ttl = 0
	case req.Duration != "":
		d, err := time.ParseDuration(req.Duration)
		if err != nil || d < time.Minute || d > 100*8760*time.Hour {
			return badRequest("field \"duration\": %q is not a Go duration between 1m and 876000h (e.g. \"720h\")", req.Duration)
		}
		ttl = d
	}
	sa, ok := s.replica.FSM().ServiceAccount(ns, name)
	if !ok {
		return notFound("service account %q not found in namespace %q", name, ns)
	}
	_, clusterID := s.replica.FSM().Initialized()
	tok, exp, err := auth.Sign(s.keys.SigningKey(), clusterID, auth.Principal{Kind: auth.KindServiceAccount, Name: name, Namespace: ns, UID: sa.UID}, ttl, time.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.TokenResponse{Token: tok, ExpiresAt: exp})
	return nil
}

// maxCertBody bounds a certificate upload (a chain and its key are a few
// KiB); it keeps the replicated command well under raftfsm.MaxCommandBytes.
const maxCertBody = 128 << 10

// uploadCert takes PEM files "cert" and "key" (multipart), checks that they
// are a pair, and replicates them: every peer then serves HTTPS with them.
func (s *clusterAPI) uploadCert(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxCertBody)
	if err := r.ParseMultipartForm(maxCertBody); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(http.StatusRequestEntityTooLarge, api.ReasonRequestEntityTooLarge, "certificate upload is over %d bytes", mbe.Limit)
		}
		return badRequest("send multipart/form-data with PEM files \"cert\" and \"key\": %v", err)
	}
	read := func(field string) ([]byte, error) {
		f, _, err := r.FormFile(field)
		if err != nil {
			return nil, badRequest("field %q: a PEM file is required", field)
		}
		defer f.Close()
		return io.ReadAll(f)
	}
	certPEM, err := read("cert")
	if err != nil {
		return err
	}
	keyPEM, err := read("key")
	if err != nil {
		return err
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return badRequest("cert and key are not a matching PEM pair: %v", err)
	}
	if _, err := s.apply(r.Context(), raftfsm.TypeCertSet, raftfsm.CertSet{Cert: raftfsm.Cert{CertPEM: string(certPEM), KeyPEM: string(keyPEM)}}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.Message{Message: "certificate uploaded; every peer serves HTTPS with it"})
	return nil
}
