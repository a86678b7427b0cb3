package httpapi

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// artifact is one kind of disk artifact, images or ISOs, for the handlers
// they share: list, get, copy, describe and delete.
type artifact[T any] struct {
	kind  string // raftfsm.KindImage or KindISO
	param string // the path parameter naming one
	list  func(f *raftfsm.FSM, ns string) []raftfsm.Image
	get   func(f *raftfsm.FSM, ns, name string) (raftfsm.Image, bool)
	toAPI func(raftfsm.Image) T
	// watch is the kind a list with ?watch=true streams ("": none).
	watch string
}

func imageArtifact() artifact[api.Image] {
	return artifact[api.Image]{kind: raftfsm.KindImage, param: "image", list: (*raftfsm.FSM).Images, get: (*raftfsm.FSM).Image, toAPI: imageToAPI, watch: watchImages}
}

func isoArtifact() artifact[api.ISO] {
	return artifact[api.ISO]{kind: raftfsm.KindISO, param: "iso", list: (*raftfsm.FSM).ISOs, get: (*raftfsm.FSM).ISO, toAPI: isoToAPI}
}

func (a artifact[T]) listHandler(s *core) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		ns := p.ByName("namespace")
		if err := s.requireNamespace(ns); err != nil {
			return err
		}
		if wantsWatch(r) {
			if a.watch == "" {
				return badRequest("%ss cannot be watched", a.kind)
			}
			return s.serveWatch(w, r, a.watch, ns)
		}
		items := []T{}
		for _, img := range a.list(s.replica.FSM(), ns) {
			items = append(items, a.toAPI(img))
		}
		writeJSON(w, http.StatusOK, api.List[T]{Items: items})
		return nil
	}
}

// lookup returns the named record of the path or a 404.
func (a artifact[T]) lookup(s *core, p httprouter.Params) (raftfsm.Image, error) {
	ns, name := p.ByName("namespace"), p.ByName(a.param)
	if err := s.requireNamespace(ns); err != nil {
		return raftfsm.Image{}, err
	}
	img, ok := a.get(s.replica.FSM(), ns, name)
	if !ok {
		return img, notFound("%s %q not found in namespace %q", a.kind, name, ns)
	}
	return img, nil
}

func (a artifact[T]) getHandler(s *core) handler {
	return func(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
		img, err := a.lookup(s, p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, a.toAPI(img))
		return nil
	}
}

// copyHandler gives the content a second name: O(1), the same digest.
func (a artifact[T]) copyHandler(s *core) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		var req api.CopyRequest
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
		if err := api.ValidateImageName("newName", req.NewName); err != nil {
			return badRequest("field \"newName\": %s", err)
		}
		if req.Description != nil && len(*req.Description) > raftfsm.MaxDescription {
			return badRequest("field \"description\": over %d bytes", raftfsm.MaxDescription)
		}
		ns := p.ByName("namespace")
		if err := s.requireNamespace(ns); err != nil {
			return err
		}
		v, err := s.apply(r.Context(), raftfsm.TypeImageCopy, raftfsm.ImageCopy{
			Kind: a.kind, Namespace: ns, Name: p.ByName(a.param), NewName: req.NewName, Description: req.Description,
			Owner: owner(r.Context()), Time: time.Now().UTC().Truncate(time.Second),
		})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusCreated, a.toAPI(*v.(*raftfsm.Image)))
		return nil
	}
}

func (a artifact[T]) describeHandler(s *core) handler {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		var req api.DescriptionRequest
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
		if len(req.Description) > raftfsm.MaxDescription {
			return badRequest("field \"description\": over %d bytes", raftfsm.MaxDescription)
		}
		ns := p.ByName("namespace")
		if err := s.requireNamespace(ns); err != nil {
			return err
		}
		v, err := s.apply(r.Context(), raftfsm.TypeImageDescribe, raftfsm.ImageDescribe{
			Kind: a.kind, Namespace: ns, Name: p.ByName(a.param), Description: req.Description,
		})
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, a.toAPI(*v.(*raftfsm.Image)))
		return nil
	}
}

func (a artifact[T]) deleteHandler(s *core) handler {
	return s.deleter(raftfsm.TypeImageDelete, a.param, func(ns, name string) any {
		return raftfsm.ImageDelete{Kind: a.kind, Namespace: ns, Name: name}
	})
}
