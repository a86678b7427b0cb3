package httpapi

import (
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
)

// vmConfigsAPI serves VM configs.
type vmConfigsAPI struct {
	*core
}

func (s *vmConfigsAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	srv.handle(Route{Method: get, Path: ns + "/vmconfigs", Rule: RuleMember}, s.listVMConfigs)
	srv.handle(Route{Method: post, Path: ns + "/vmconfigs", Rule: RuleMember, Write: true, Target: Leader}, s.createVMConfig)
	srv.handle(Route{Method: get, Path: ns + "/vmconfigs/:vmconfig", Rule: RuleMember}, s.getVMConfig)
	srv.handle(Route{Method: http.MethodPatch, Path: ns + "/vmconfigs/:vmconfig", Rule: RuleMember, Write: true, Target: Leader}, s.changeVMConfig)
	srv.handle(Route{Method: del, Path: ns + "/vmconfigs/:vmconfig", Rule: RuleMember, Write: true, Target: Leader},
		s.deleter(raftfsm.TypeVMConfigDelete, "vmconfig", func(ns, name string) any { return raftfsm.VMConfigDelete{Namespace: ns, Name: name} }))
}

func (s *vmConfigsAPI) listVMConfigs(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	items := []api.VMConfig{}
	for _, c := range s.replica.FSM().VMConfigs(ns) {
		items = append(items, s.vmConfigToAPI(c))
	}
	writeJSON(w, http.StatusOK, api.List[api.VMConfig]{Items: items})
	return nil
}

func (s *vmConfigsAPI) getVMConfig(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("vmconfig")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	c, ok := s.replica.FSM().VMConfig(ns, name)
	if !ok {
		return notFound("vmconfig %q not found in namespace %q", name, ns)
	}
	writeJSON(w, http.StatusOK, s.vmConfigToAPI(c))
	return nil
}

func (s *vmConfigsAPI) createVMConfig(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	var req api.VMConfig
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	field := func(name, format string, args ...any) error {
		return badRequest("field %q: "+format, append([]any{name}, args...)...)
	}
	if err := api.ValidateName("name", req.Name, api.MaxVMConfigLen); err != nil {
		return field("name", "%s", err)
	}
	if req.Image == "" {
		return field("image", "is required")
	}
	if api.IsRegistryReference(req.Image) {
		if _, err := ocidisk.ParseUserReference(req.Image, true, false); err != nil {
			return field("image", "%s", err)
		}
	}
	if err := req.Fields().Validate(); err != nil {
		return badRequest("%s", err)
	}
	if req.TagRequired && req.Tag == "" {
		req.TagRequired = false // nothing to require; see deploy.Resolve
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	if req.Node != "" {
		if n, ok := s.replica.FSM().Node(req.Node); !ok || n.Namespace != ns {
			return notFound("node %q not found in namespace %q", req.Node, ns)
		}
	}
	if req.ISO != "" {
		if _, ok := s.replica.FSM().ISO(ns, req.ISO); !ok {
			return notFound("iso %q not found in namespace %q", req.ISO, ns)
		}
	}
	var ttl int64
	if req.TTL != "" {
		d, err := api.ParseTTL(req.TTL)
		if err != nil {
			return badRequest("field \"ttl\": %s", err)
		}
		ttl = int64(d / time.Second)
	}
	cfg := raftfsm.VMConfig{
		Name: req.Name, Namespace: ns, Image: req.Image, MemoryGiB: req.Memory, Scheduler: req.Scheduler,
		Tag: req.Tag, TagRequired: req.TagRequired, Node: req.Node, Warm: req.Warm, Hot: req.Hot,
		VMOptions: raftfsm.VMOptions{
			CPU: req.CPU, GPUPassthrough: req.GPUPassthrough, ISO: req.ISO, LegacyIO: req.LegacyIO, NetBoost: req.NetBoost, SharedStorage: req.SharedStorage,
			Display:        raftfsm.Display{Width: req.DisplayWidth, Height: req.DisplayHeight, DPI: req.DisplayDPI},
			CustomMetadata: req.CustomMetadata, TTLSeconds: ttl,
		},
		Owner:     owner(r.Context()),
		CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	v, err := s.apply(r.Context(), raftfsm.TypeVMConfigCreate, raftfsm.VMConfigCreate{Config: cfg})
	if err != nil {
		return err
	}
	if c, ok := v.(*raftfsm.VMConfig); ok {
		cfg = *c
	}
	writeJSON(w, http.StatusCreated, s.vmConfigToAPI(cfg))
	return nil
}

// changeVMConfig turns a config's booted templates on or off and sets its
// hot pool (the changes a config takes: the rest of it is what its VMs
// were made from).
func (s *vmConfigsAPI) changeVMConfig(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("vmconfig")
	var req api.VMConfigChange
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if (req.Warm == nil && req.Hot == nil) || len(w.Header().Values("Warning")) > 0 {
		w.Header().Del("Warning")
		return badRequest("a config changes only fields %q and %q; delete and create it again to change the rest", "warm", "hot")
	}
	if req.Hot != nil && (*req.Hot < 0 || *req.Hot > api.MaxHot) {
		return badRequest("hot is 0 to %d guests per node, not %d", api.MaxHot, *req.Hot)
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	var v any
	var err error
	if req.Warm != nil {
		if v, err = s.apply(r.Context(), raftfsm.TypeVMConfigSetWarm, raftfsm.VMConfigSetWarm{Namespace: ns, Name: name, Warm: *req.Warm}); err != nil {
			return err
		}
	}
	if req.Hot != nil {
		if v, err = s.apply(r.Context(), raftfsm.TypeVMConfigSetHot, raftfsm.VMConfigSetHot{Namespace: ns, Name: name, Hot: *req.Hot}); err != nil {
			return err
		}
	}
	c, ok := v.(*raftfsm.VMConfig)
	if !ok {
		return notFound("vmconfig %q not found in namespace %q", name, ns)
	}
	writeJSON(w, http.StatusOK, s.vmConfigToAPI(*c))
	return nil
}
