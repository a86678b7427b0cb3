package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
)

// registryAPI serves registries: credentials, jobs, pushes, remote catalogs and pulls.
type registryAPI struct {
	*core
	jobs       Jobs
	registries Registries
	keys       auth.Keys
}

func (s *registryAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	srv.handle(Route{Method: post, Path: ns + "/vms/:vm/push", Rule: RuleMember, PoolVM: true, Write: true, Target: Leader}, s.pushVM)
	srv.handle(Route{Method: post, Path: ns + "/images/:image/push", Rule: RuleMember, Write: true, Target: Leader}, s.pushImage)
	srv.handle(Route{Method: get, Path: ns + "/registrycredentials", Rule: RuleAdmin}, s.listRegistryCredentials)
	srv.handle(Route{Method: post, Path: ns + "/registrycredentials", Rule: RuleAdmin, Write: true, Target: Leader}, s.setRegistryCredential)
	srv.handle(Route{Method: del, Path: ns + "/registrycredentials/:registry", Rule: RuleAdmin, Write: true, Target: Leader}, s.deleteRegistryCredential)
	srv.handle(Route{Method: get, Path: "/api/v1/remotecatalogs", Rule: RuleAdmin}, s.getRemoteCatalogs)
	srv.handle(Route{Method: http.MethodPut, Path: "/api/v1/remotecatalogs", Rule: RuleAdmin, Write: true, Target: Leader}, s.setRemoteCatalogs)
	srv.handle(Route{Method: get, Path: ns + "/remoteimages", Rule: RuleMember}, s.listRemoteImages)
	srv.handle(Route{Method: post, Path: ns + "/remoteimages/:remoteimage/pull", Rule: RuleMember, Write: true, Target: Leader}, s.pullRemote(api.RemoteTypeImage, "remoteimage"))
	srv.handle(Route{Method: post, Path: ns + "/remoteisos/:remoteiso/pull", Rule: RuleMember, Write: true, Target: Leader}, s.pullRemote(api.RemoteTypeISO, "remoteiso"))
	srv.handle(Route{Method: get, Path: ns + "/jobs", Rule: RuleMember}, s.listJobs)
	srv.handle(Route{Method: get, Path: ns + "/jobs/:job", Rule: RuleMember}, s.getJob)
}

// Registry credentials: the password is sealed here, on the peer that runs
// the handler (the leader), before the command is proposed.

func credToAPI(c raftfsm.RegistryCredential) api.RegistryCredential {
	return api.RegistryCredential{Server: c.Server, Username: c.Username, AllowInsecure: c.AllowInsecure, CreatedAt: c.CreatedAt}
}

func (s *registryAPI) listRegistryCredentials(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	items := []api.RegistryCredential{}
	for _, c := range s.replica.FSM().RegistryCredentials(ns) {
		items = append(items, credToAPI(c))
	}
	writeJSON(w, http.StatusOK, api.List[api.RegistryCredential]{Items: items})
	return nil
}

func (s *registryAPI) setRegistryCredential(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	var req api.RegistryCredentialRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if _, err := ocidisk.ParseUserReference(req.Server+"/x:y", req.AllowInsecure, false); err != nil || req.Server == "" {
		return badRequest("field \"server\": %q is not a registry host[:port]", req.Server)
	}
	if len(req.Username) > 1024 || len(req.Password) > 1024 {
		return badRequest("fields \"username\" and \"password\": at most 1024 bytes each")
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	sealed, err := auth.Seal(s.keys.SealKey(), []byte(req.Password), auth.RegistryCredentialAAD(ns, req.Server))
	if err != nil {
		return err
	}
	v, err := s.apply(r.Context(), raftfsm.TypeRegCredSet, raftfsm.RegistryCredentialSet{Credential: raftfsm.RegistryCredential{
		Namespace: ns, Server: req.Server, Username: req.Username, SealedPassword: sealed, AllowInsecure: req.AllowInsecure,
		CreatedAt: time.Now().UTC().Truncate(time.Second),
	}})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, credToAPI(*v.(*raftfsm.RegistryCredential)))
	return nil
}

func (s *registryAPI) deleteRegistryCredential(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if _, err := s.apply(r.Context(), raftfsm.TypeRegCredDelete, raftfsm.RegistryCredentialDelete{Namespace: p.ByName("namespace"), Server: p.ByName("registry")}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func jobToAPI(j raftfsm.Job) api.Job {
	out := api.Job{
		Name: j.Name, Type: j.Type, State: j.State, BytesDone: j.BytesDone, BytesTotal: j.BytesTotal, Message: j.Message,
		StartTime: j.StartTime, CompletionTime: j.CompletionTime, Reference: j.Reference, VM: j.VM, Image: j.Image,
		Node: j.Node, Namespace: j.Namespace, Owner: j.Owner,
	}
	for _, t := range j.Targets {
		out.Targets = append(out.Targets, api.JobTarget{Node: t.Node, State: t.State, BytesDone: t.BytesDone, BytesTotal: t.BytesTotal, Message: t.Message})
	}
	return out
}

func (s *registryAPI) listJobs(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	if wantsWatch(r) {
		return s.serveWatch(w, r, watchJobs, ns)
	}
	items := []api.Job{}
	for _, j := range s.replica.FSM().Jobs(ns) {
		items = append(items, jobToAPI(j))
	}
	writeJSON(w, http.StatusOK, api.List[api.Job]{Items: items})
	return nil
}

func (s *registryAPI) getJob(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("job")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	j, ok := s.replica.FSM().Job(ns, name)
	if !ok {
		return notFound("job %q not found", name)
	}
	writeJSON(w, http.StatusOK, jobToAPI(j))
	return nil
}

// pushVM starts a job on the VM's host that sends its disk to a registry.
func (s *registryAPI) pushVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.push(w, r, p, raftfsm.Job{VM: p.ByName("vm")})
}

// pushImage starts a job on a peer that holds the image.
func (s *registryAPI) pushImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.push(w, r, p, raftfsm.Job{Image: p.ByName("image"), Kind: raftfsm.KindImage})
}

func (s *registryAPI) push(w http.ResponseWriter, r *http.Request, p httprouter.Params, j raftfsm.Job) error {
	ns := p.ByName("namespace")
	var req api.PushRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	ref, err := ocidisk.ParseUserReference(req.ImageReference, true, true)
	if err != nil {
		return badRequest("field \"imageReference\": %s", err)
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	j.Namespace, j.Type, j.Reference, j.Owner = ns, raftfsm.JobPush, ref.Name(), owner(r.Context())
	job, err := s.jobs.CreateJob(r.Context(), j)
	if err != nil {
		return registryError(req.ImageReference, err)
	}
	writeJSON(w, http.StatusOK, api.JobName{JobName: job.Name})
	return nil
}

// registryError answers a registry's error: the reference or the image is bad (400), the
// registry refused the credentials or this cluster may not reach it (403),
// it has no such image (404), or it could not be read (503).
func registryError(ref string, err error) error {
	var ae *apiError
	reason := ocidisk.Reason(err)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, ocidisk.ErrBadReference), errors.Is(err, ocidisk.ErrPlainHTTP), errors.Is(err, ocidisk.ErrNoDisk):
		return badRequest("field %q: %s", "image", reason)
	case errors.Is(err, ocidisk.ErrBadImage):
		return badRequest("field %q: %s is not an image svc can run: %s", "image", ref, reason)
	case errors.Is(err, diskcheck.ErrRefused):
		return badRequest("field %q: the disk of %s is refused: %s", "image", ref, reason)
	case errors.Is(err, ocidisk.ErrUnreachable):
		return errorf(http.StatusForbidden, api.ReasonForbidden, "%s", reason)
	case ocidisk.IsUnauthorized(err):
		return errorf(http.StatusForbidden, api.ReasonForbidden, "registry credentials for %s were refused (add them with POST .../registrycredentials): %s", ref, reason)
	case ocidisk.IsNotFound(err):
		return notFound("%s not found in its registry: %s", ref, reason)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errorf(http.StatusGatewayTimeout, api.ReasonTimeout, "reading %s took too long: %s", ref, reason)
	case errors.Is(err, raftfsm.ErrNotFound), errors.Is(err, raftfsm.ErrAlreadyExists), errors.Is(err, raftfsm.ErrInvalid), errors.Is(err, raftfsm.ErrConflict),
		errors.Is(err, raftfsm.ErrTooMany):
		return err
	}
	return unavailable("30", "cannot read %s from its registry: %s", ref, reason)
}
