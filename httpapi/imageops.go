package httpapi

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// commitVM records a commit of the VM's disk over its image; its host
// carries it out. The answer is at once: where to watch the image.
func (s *vmsAPI) commitVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.CommitRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	return s.imageOp(w, r, p, raftfsm.OpCommit, "", req.Description)
}

// saveVM records a save of the VM's disk as a new image.
func (s *vmsAPI) saveVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.SaveRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := api.ValidateImageName("imageName", req.ImageName); err != nil {
		return badRequest("field \"imageName\": %s", err)
	}
	return s.imageOp(w, r, p, raftfsm.OpSave, req.ImageName, req.Description)
}

func (s *vmsAPI) imageOp(w http.ResponseWriter, r *http.Request, p httprouter.Params, kind, image string, description *string) error {
	ns := p.ByName("namespace")
	if description != nil && len(*description) > raftfsm.MaxDescription {
		return badRequest("field \"description\": over %d bytes", raftfsm.MaxDescription)
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	v, err := s.apply(r.Context(), raftfsm.TypeVMImageOp, raftfsm.VMImageOp{
		Namespace: ns, VM: p.ByName("vm"), Kind: kind, Image: image, Description: description,
		Owner: owner(r.Context()), Time: time.Now().UTC().Truncate(time.Second),
	})
	if err != nil {
		return err
	}
	img := v.(*raftfsm.Image)
	writeJSON(w, http.StatusOK, api.StatusURL{StatusURL: "/api/v1/namespaces/" + ns + "/images/" + img.Name})
	return nil
}
