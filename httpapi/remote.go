package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
)

// Remote catalogs: OCI repositories whose tags every namespace can pull
// (with its own registry credentials) as images and ISOs.

// remoteTimeout bounds listing the remote catalogs (a manifest per tag).
const remoteTimeout = 2 * time.Minute

func (s *registryAPI) getRemoteCatalogs(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	writeJSON(w, http.StatusOK, api.RemoteCatalogs{Repositories: orEmpty(s.replica.FSM().Catalogs())})
	return nil
}

func (s *registryAPI) setRemoteCatalogs(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req api.RemoteCatalogs
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.Repositories) > raftfsm.MaxCatalogs {
		return badRequest("field \"repositories\": %d repositories, at most %d", len(req.Repositories), raftfsm.MaxCatalogs)
	}
	for _, repo := range req.Repositories {
		if _, err := ocidisk.ParseUserReference(repo+":x", true, false); err != nil {
			return badRequest("field \"repositories\": %q is not <registry>/<path> without a tag: %s", repo, err)
		}
	}
	v, err := s.apply(r.Context(), raftfsm.TypeCatalogSet, raftfsm.CatalogSet{Repositories: req.Repositories})
	if err != nil {
		return err
	}
	repos, _ := v.([]string)
	writeJSON(w, http.StatusOK, api.RemoteCatalogs{Repositories: orEmpty(repos)})
	return nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (s *registryAPI) listRemoteImages(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), remoteTimeout)
	defer cancel()
	items, err := s.registries.RemoteImages(ctx, ns)
	if err != nil {
		return registryError("a remote catalog", err)
	}
	if items == nil {
		items = []api.RemoteImage{}
	}
	writeJSON(w, http.StatusOK, api.List[api.RemoteImage]{Items: items})
	return nil
}

// pullRemote answers 202 with the job that copies a remote image or ISO.
func (s *registryAPI) pullRemote(typ, param string) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		ns := p.ByName("namespace")
		var req api.PullRequest
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
		if req.NewName != "" {
			if err := api.ValidateImageName("newName", req.NewName); err != nil {
				return badRequest("field \"newName\": %s", err)
			}
		}
		if err := s.requireNamespace(ns); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(r.Context(), remoteTimeout)
		defer cancel()
		job, err := s.jobs.PullRemote(ctx, ns, typ, p.ByName(param), req.NewName, owner(r.Context()))
		if err != nil {
			return registryError("a remote catalog", err)
		}
		writeJSON(w, http.StatusAccepted, api.JobAccepted{JobName: job.Name, StatusURL: "/api/v1/namespaces/" + ns + "/jobs/" + job.Name})
		return nil
	}
}
