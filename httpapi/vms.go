package httpapi

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// execTimeout bounds the wait for an exec action to take effect.
const execTimeout = 3 * time.Minute

func (s *Server) listVMs(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	items := []api.VM{}
	for _, vm := range s.b.FSM().VMs(ns) {
		items = append(items, s.vmToAPI(vm))
	}
	writeJSON(w, http.StatusOK, api.List[api.VM]{Items: items})
	return nil
}

func (s *Server) getVM(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("vm")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	vm, ok := s.b.FSM().VM(ns, name)
	if !ok {
		return notFound("vm %q not found in namespace %q", name, ns)
	}
	writeJSON(w, http.StatusOK, s.vmToAPI(vm))
	return nil
}

func (s *Server) deleteVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("vm")
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	if _, err := s.b.Apply(ctx, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: ns, Name: name}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) execVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns, name := p.ByName("namespace"), p.ByName("vm")
	var req api.ExecRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	switch req.Action {
	case raftfsm.ActionStart, raftfsm.ActionStop, raftfsm.ActionSuspend, raftfsm.ActionResume, raftfsm.ActionRevert:
	default:
		return badRequest("field \"action\": %q is not one of start, stop, suspend, resume, revert", req.Action)
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	v, err := s.b.Apply(actx, raftfsm.TypeVMAction, raftfsm.VMAction{Namespace: ns, Name: name, Action: req.Action})
	cancel()
	if err != nil {
		return err
	}
	after, _ := v.(*raftfsm.VM)
	want := map[string]string{
		raftfsm.ActionStart: raftfsm.VMRunning, raftfsm.ActionResume: raftfsm.VMRunning, raftfsm.ActionRevert: raftfsm.VMRunning,
		raftfsm.ActionStop: raftfsm.VMStopped, raftfsm.ActionSuspend: raftfsm.VMSuspended,
	}[req.Action]
	wctx, cancel := context.WithTimeout(r.Context(), execTimeout)
	defer cancel()
	vm, err := s.waitVM(wctx, ns, name, func(vm raftfsm.VM) (bool, error) {
		if vm.Status == raftfsm.VMFailed {
			return false, errorf(http.StatusInternalServerError, api.ReasonInternalError, "vm %q failed: %s", name, vm.ErrorMessage)
		}
		if after != nil && vm.ObservedRevertGen < after.RevertGen {
			return false, nil
		}
		return vm.Status == want, nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.vmToAPI(vm))
	return nil
}

// waitVM watches the replica until done says the VM is where it should be,
// done returns an error, the VM disappears or ctx ends.
func (s *Server) waitVM(ctx context.Context, ns, name string, done func(raftfsm.VM) (bool, error)) (raftfsm.VM, error) {
	for {
		changed := s.b.FSM().Changed()
		vm, ok := s.b.FSM().VM(ns, name)
		if !ok {
			return vm, notFound("vm %q was deleted", name)
		}
		if ok, err := done(vm); err != nil || ok {
			return vm, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return vm, errorf(http.StatusGatewayTimeout, api.ReasonTimeout, "vm %q is %s, not there yet after waiting: %v", name, vm.Status, ctx.Err())
		}
	}
}

func (s *Server) deployVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ns := p.ByName("namespace")
	var req api.DeployRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := s.requireNamespace(ns); err != nil {
		return err
	}
	plan, err := s.planDeploy(ns, req)
	if err != nil {
		return err
	}
	plan.vm.Owner = owner(r.Context())
	vm, err := s.place(r.Context(), plan)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(r.Context(), plan.timeout)
	defer cancel()
	got, err := s.waitVM(wctx, ns, vm.Name, func(vm raftfsm.VM) (bool, error) {
		if vm.Status == raftfsm.VMFailed {
			return false, errorf(http.StatusInternalServerError, api.ReasonInternalError, "vm %q failed to start on node %s: %s", vm.Name, vm.Node, vm.ErrorMessage)
		}
		return vm.Status == raftfsm.VMRunning, nil
	})
	if err != nil {
		// Nothing stays allocated after a failed deploy.
		dctx, dcancel := context.WithTimeout(context.Background(), s.cfg.WriteTimeout)
		defer dcancel()
		if _, derr := s.b.Apply(dctx, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: ns, Name: vm.Name, UID: vm.UID}); derr != nil && !errors.Is(derr, raftfsm.ErrNotFound) {
			s.log.Error("cannot remove a failed deploy", "vm", vm.Name, "err", derr)
		}
		var ae *apiError
		if errors.As(err, &ae) && ae.code == http.StatusGatewayTimeout {
			return errorf(ae.code, ae.reason, "%s; the VM was removed", ae.msg)
		}
		return err
	}
	out := s.vmToAPI(got)
	if plan.warnings != nil {
		out.PortWarnings = plan.warnings
	}
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// place runs the scheduler and proposes the VM. Placements on this leader
// take turns (a few milliseconds each), so concurrent deploys do not pick
// the same room and ports; Apply still checks both, and a VM that lost to a
// placement elsewhere (a leader change) is placed again, a bounded number of
// times.
func (s *Server) place(ctx context.Context, plan *deployPlan) (raftfsm.VM, error) {
	s.placing.Lock()
	defer s.placing.Unlock()
	const attempts = 8
	var lastErr error
	for range attempts {
		vm := plan.vm
		if plan.generate {
			vm.Name = generateName(plan.prefix)
		}
		node, err := scheduler.Place(s.schedulerNodes(), plan.req)
		if err != nil {
			return vm, errorf(http.StatusConflict, api.ReasonConflict, "%s", err.Error())
		}
		n, _ := s.b.FSM().Node(node)
		vm.Node, vm.IP, vm.Arch = node, n.Addr, n.Arch
		vm.VNCPort, vm.SSHPort, vm.ScreensharePort, err = allocatePorts(s.b.FSM().PortsInUse(node), vm.ReservedPorts)
		if err != nil {
			lastErr = err
			continue
		}
		vm.CreatedAt = time.Now().UTC().Truncate(time.Second)
		vm.VNCPassword = vncPassword()
		actx, cancel := context.WithTimeout(ctx, s.cfg.WriteTimeout)
		v, err := s.b.Apply(actx, raftfsm.TypeVMCreate, raftfsm.VMCreate{VM: vm})
		cancel()
		switch {
		case err == nil:
			if created, ok := v.(*raftfsm.VM); ok {
				return *created, nil // with its UID
			}
			return vm, nil
		case errors.Is(err, raftfsm.ErrNoRoom), plan.generate && errors.Is(err, raftfsm.ErrAlreadyExists):
			lastErr = err
			continue
		}
		return vm, err
	}
	return plan.vm, errorf(http.StatusConflict, api.ReasonConflict, "could not place the VM after %d attempts: %v", attempts, lastErr)
}

const nameAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// vncPasswordAlphabet makes VNC passwords: VNC authentication uses 8
// characters, so each carries as much as a typable character can.
const vncPasswordAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"

// vncPassword returns a random 8-character VNC password.
func vncPassword() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = vncPasswordAlphabet[int(b[i])%len(vncPasswordAlphabet)]
	}
	return string(b)
}

// generateName appends '-' and 5 random lowercase letters or digits to prefix.
func generateName(prefix string) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = nameAlphabet[int(b[i])%len(nameAlphabet)]
	}
	return prefix + "-" + string(b)
}

// deployPlan is a validated deploy: the VM to propose and how to place it.
type deployPlan struct {
	vm       raftfsm.VM
	req      scheduler.Request
	generate bool
	prefix   string
	timeout  time.Duration
	warnings []string
}

// Limits of deploy fields.
const (
	maxCPU       = 256
	maxMemoryGiB = 4096
	// A deploy waits at least a minute for Running: shorter, a healthy VM
	// could be removed again for being slow to start.
	minTimeoutMins = 1
	maxTimeoutMins = 24 * 60
	maxDisplay     = 16384
)

// planDeploy validates a deploy request field by field (400 naming the field,
// 404 for a missing image, config or node) and merges it over its VM config.
func (s *Server) planDeploy(ns string, r api.DeployRequest) (*deployPlan, error) {
	fsm := s.b.FSM()
	field := func(name, format string, args ...any) error {
		return badRequest("field %q: %s", name, fmt.Sprintf(format, args...))
	}
	var cfg raftfsm.VMConfig
	if r.VMConfig != "" {
		zeroIsUnset(&r)
		if err := api.ValidateName("vmConfig", r.VMConfig, api.MaxVMConfigLen); err != nil {
			return nil, field("vmConfig", "%s", err)
		}
		c, ok := fsm.VMConfig(ns, r.VMConfig)
		if !ok {
			return nil, notFound("vmconfig %q not found in namespace %q", r.VMConfig, ns)
		}
		cfg = c
	}
	image := first(r.Image, cfg.Image)
	if image == "" {
		return nil, field("image", "image or vmConfig is required")
	}
	plan := &deployPlan{timeout: api.DefaultTimeoutMinutes * time.Minute}
	switch {
	case r.Name == "" || r.ShouldGenerateName:
		plan.generate, plan.prefix = true, first(r.Name, "vm")
		if err := api.ValidateName("name", plan.prefix, api.MaxNameLen-6); err != nil {
			return nil, field("name", "%s", err)
		}
	default:
		if err := api.ValidateName("name", r.Name, api.MaxNameLen); err != nil {
			return nil, field("name", "%s", err)
		}
	}
	cpu := firstPositive(cfg.CPU, api.DefaultCPU)
	if r.CPU != nil {
		if *r.CPU < 1 || *r.CPU > maxCPU {
			return nil, field("cpu", "%d is not between 1 and %d", *r.CPU, maxCPU)
		}
		cpu = *r.CPU
	}
	memGiB := cfg.MemoryGiB
	if r.Memory != nil {
		if *r.Memory < 0 || *r.Memory > maxMemoryGiB {
			return nil, field("memory", "%g GiB is not between 0 (the default) and %d", *r.Memory, maxMemoryGiB)
		}
		memGiB = *r.Memory
	}
	if memGiB == 0 {
		memGiB = api.DefaultMemoryGiB
	}
	strategy := first(r.Scheduler, cfg.Scheduler, scheduler.StrategyDefault)
	if !scheduler.ValidStrategy(strategy) {
		return nil, field("scheduler", "%q is not default or most-allocated", strategy)
	}
	tag := first(r.Tag, cfg.Tag)
	if tag != "" {
		if err := api.ValidateTag(tag); err != nil {
			return nil, field("tag", "%s", err)
		}
	}
	tagRequired := pick(r.TagRequired, cfg.TagRequired)
	if tagRequired && tag == "" {
		return nil, field("tagRequired", "needs a tag")
	}
	reserved, err := parseReservedPorts(r.ReservedPorts)
	if err != nil {
		return nil, field("reservedPorts", "%s", err)
	}
	if r.Timeout != nil {
		if *r.Timeout < minTimeoutMins || *r.Timeout > maxTimeoutMins {
			return nil, field("timeout", "%g minutes is not between %d and %d", *r.Timeout, minTimeoutMins, maxTimeoutMins)
		}
		plan.timeout = time.Duration(*r.Timeout * float64(time.Minute))
	}
	meta := cfg.CustomMetadata
	if r.CustomMetadata != nil {
		meta = r.CustomMetadata
	}
	if len(meta) > api.MaxMetadata {
		return nil, field("customMetadata", "%d entries, at most %d", len(meta), api.MaxMetadata)
	}
	for k, v := range meta {
		if k == "" || len(k) > 63 || len(v) > 1024 {
			return nil, field("customMetadata", "keys must be 1-63 characters and values at most 1024 (%q)", k)
		}
	}
	display := cfg.Display
	for _, d := range []struct {
		name string
		v    *int
		dst  *int
	}{{"displayWidth", r.DisplayWidth, &display.Width}, {"displayHeight", r.DisplayHeight, &display.Height}, {"displayDpi", r.DisplayDPI, &display.DPI}} {
		if d.v == nil {
			continue
		}
		if *d.v < 0 || *d.v > maxDisplay {
			return nil, field(d.name, "%d is not between 0 and %d", *d.v, maxDisplay)
		}
		*d.dst = *d.v
	}
	node := first(r.Node, cfg.Node)
	if node != "" {
		if n, ok := fsm.Node(node); !ok || n.Namespace != ns {
			return nil, notFound("node %q not found in namespace %q", node, ns)
		}
	}
	if strings.Contains(image, "/") {
		return nil, field("image", "%q is a registry reference; deploying from a registry is not supported by this version: upload the image first", image)
	}
	img, ok := fsm.Image(ns, image)
	if !ok {
		return nil, notFound("image %q not found in namespace %q", image, ns)
	}
	iso := first(r.ISO, cfg.ISO)
	if iso != "" {
		return nil, notFound("iso %q not found in namespace %q", iso, ns)
	}
	gpu := pick(r.GPUPassthrough, cfg.GPUPassthrough)
	vm := raftfsm.VM{
		Name: r.Name, Namespace: ns, Image: img.Name, ImageDigest: img.Digest, ImageFormat: img.Format, VMConfig: cfg.Name,
		VMOptions: raftfsm.VMOptions{
			CPU: cpu, MemoryBytes: int64(memGiB * (1 << 30)), GPUPassthrough: gpu,
			LegacyIO: pick(r.LegacyIO, cfg.LegacyIO), NetBoost: pick(r.NetBoost, cfg.NetBoost),
			Display: display, CustomMetadata: meta,
		},
		ReservedPorts: reserved,
	}
	if gpu {
		vm.GPU = 1
	}
	plan.vm = vm
	plan.req = scheduler.Request{
		Namespace: ns, CPU: cpu, Memory: vm.MemoryBytes, GPU: vm.GPU, Arch: img.Arch, Node: node,
		Tag: tag, TagRequired: tagRequired, Strategy: strategy,
	}
	for _, rp := range reserved {
		plan.req.HostPorts = append(plan.req.HostPorts, rp.Host)
		if rp.Guest == 22 || rp.Guest == 5900 {
			plan.warnings = append(plan.warnings, fmt.Sprintf("guest port %d is already forwarded (ssh or screenshare); %d:%d forwards it again", rp.Guest, rp.Host, rp.Guest))
		}
		if rp.Host < 1024 {
			plan.warnings = append(plan.warnings, fmt.Sprintf("node port %d is privileged; it works only where the hypervisor may bind it", rp.Host))
		}
	}
	return plan, nil
}

// zeroIsUnset drops the zero values of a deploy body with a VM config:
// published clients send "memory": 0.0, "cpu": 0 and false flags for what
// the user did not give, and the config's values must stand.
func zeroIsUnset(r *api.DeployRequest) {
	if r.CPU != nil && *r.CPU == 0 {
		r.CPU = nil
	}
	if r.Memory != nil && *r.Memory == 0 {
		r.Memory = nil
	}
	for _, b := range []**bool{&r.TagRequired, &r.GPUPassthrough, &r.NetBoost, &r.LegacyIO} {
		if *b != nil && !**b {
			*b = nil
		}
	}
}

func first(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstPositive(vals ...int) int {
	for _, v := range vals {
		if v > 0 {
			return v
		}
	}
	return 0
}

func pick(v *bool, dflt bool) bool {
	if v != nil {
		return *v
	}
	return dflt
}
