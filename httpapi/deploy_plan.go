package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// deployPlan is a validated deploy: what to place, how long to wait for it,
// and what to warn the caller of.
type deployPlan struct {
	scheduler.Placement
	timeout  time.Duration
	warnings []string
}

// planDeploy validates a deploy request field by field (400 naming the field,
// 404 for a missing image, config or node) and merges it over its VM config.
func (s *Server) planDeploy(ctx context.Context, ns string, r api.DeployRequest) (*deployPlan, error) {
	fsm := s.replica.FSM()
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
		plan.NamePrefix = first(r.Name, "vm")
		if err := api.ValidateName("name", plan.NamePrefix, api.MaxNameLen-6); err != nil {
			return nil, field("name", "%s", err)
		}
	default:
		if err := api.ValidateName("name", r.Name, api.MaxNameLen); err != nil {
			return nil, field("name", "%s", err)
		}
	}
	if err := r.Fields().Validate(); err != nil {
		return nil, badRequest("%s", err)
	}
	cpu := firstPositive(cfg.CPU, api.DefaultCPU)
	if r.CPU != nil {
		cpu = *r.CPU
	}
	memGiB := cfg.MemoryGiB
	if r.Memory != nil {
		memGiB = *r.Memory
	}
	if memGiB == 0 {
		memGiB = api.DefaultMemoryGiB
	}
	strategy := first(r.Scheduler, cfg.Scheduler, api.SchedulerDefault)
	tag := first(r.Tag, cfg.Tag)
	// No tag to require: the VM goes anywhere, as without tagRequired
	// (published clients send it when a user ticks the box and names none).
	tagRequired := pick(r.TagRequired, cfg.TagRequired) && tag != ""
	reserved, err := parseReservedPorts(r.ReservedPorts)
	if err != nil {
		return nil, field("reservedPorts", "%s", err)
	}
	if r.Timeout != nil {
		plan.timeout = time.Duration(*r.Timeout * float64(time.Minute))
	}
	meta := cfg.CustomMetadata
	if r.CustomMetadata != nil {
		meta = r.CustomMetadata
	}
	display := cfg.Display
	for _, d := range []struct{ v, dst *int }{{r.DisplayWidth, &display.Width}, {r.DisplayHeight, &display.Height}, {r.DisplayDPI, &display.DPI}} {
		if d.v != nil {
			*d.dst = *d.v
		}
	}
	node := first(r.Node, cfg.Node)
	if node != "" {
		if n, ok := fsm.Node(node); !ok || n.Namespace != ns {
			return nil, notFound("node %q not found in namespace %q", node, ns)
		}
	}
	var img raftfsm.Image
	var source string
	if api.IsRegistryReference(image) {
		var err error
		if img, err = s.resolveImage(ctx, ns, image); err != nil {
			return nil, err
		}
		source = img.Source
	} else {
		var ok bool
		if img, ok = fsm.Image(ns, image); !ok {
			return nil, notFound("image %q not found in namespace %q", image, ns)
		}
	}
	if !img.Usable() {
		return nil, errorf(http.StatusConflict, api.ReasonConflict, "image %q has no content yet (%s): its save is under way or failed", image, stateOf(img))
	}
	var isoDigest string
	guestOS := img.OS
	iso := first(r.ISO, cfg.ISO)
	if iso != "" {
		i, ok := fsm.ISO(ns, iso)
		if !ok {
			return nil, notFound("iso %q not found in namespace %q", iso, ns)
		}
		isoDigest = i.Digest
		if i.OS == raftfsm.OSMacOS {
			guestOS = raftfsm.OSMacOS // a macOS restore image installs macOS
		}
	}
	ttl := cfg.TTLSeconds
	if r.TTL != "" {
		d, err := api.ParseTTL(r.TTL)
		if err != nil {
			return nil, field("ttl", "%s", err)
		}
		ttl = int64(d / time.Second)
	}
	gpu := pick(r.GPUPassthrough, cfg.GPUPassthrough)
	vm := raftfsm.VM{
		Name: r.Name, Namespace: ns, Image: img.Name, ImageDigest: img.Digest, ImageFormat: img.Format, ImageSource: source, VMConfig: cfg.Name, ISODigest: isoDigest,
		OS: guestOS, NVRAMDigest: img.NVRAMDigest, HardwareModel: img.HardwareModel,
		VMOptions: raftfsm.VMOptions{
			CPU: cpu, MemoryBytes: int64(memGiB * (1 << 30)), GPUPassthrough: gpu,
			LegacyIO: pick(r.LegacyIO, cfg.LegacyIO), NetBoost: pick(r.NetBoost, cfg.NetBoost), SharedStorage: pick(r.SharedStorage, cfg.SharedStorage),
			Display: display, CustomMetadata: meta, ISO: iso, TTLSeconds: ttl,
		},
		ReservedPorts: reserved, DiskBytes: img.VirtualSize, BaseDiskBytes: img.VirtualSize,
	}
	if gpu {
		vm.GPU = 1
	}
	if vm.SharedStorage {
		// Before placement: nodes offering none would otherwise answer first.
		if err := fsm.SharedStorageOn(ns); err != nil {
			return nil, err
		}
	}
	plan.MacOS = guestOS == raftfsm.OSMacOS
	plan.VM, plan.Arch, plan.Node, plan.Tag, plan.TagRequired, plan.Scheduler = vm, img.Arch, node, tag, tagRequired, strategy
	for _, rp := range reserved {
		if rp.Guest == 22 || rp.Guest == 5900 {
			plan.warnings = append(plan.warnings, fmt.Sprintf("guest port %d is already forwarded (ssh or screenshare); %d:%d forwards it again", rp.Guest, rp.Host, rp.Guest))
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
	for _, b := range []**bool{&r.TagRequired, &r.GPUPassthrough, &r.NetBoost, &r.LegacyIO, &r.SharedStorage} {
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

// parseReservedPorts reads "8080:80,2222:22" (node:guest).
func parseReservedPorts(s string) ([]raftfsm.PortMap, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > api.MaxReservedPorts {
		return nil, fmt.Errorf("%d pairs, at most %d", len(parts), api.MaxReservedPorts)
	}
	var out []raftfsm.PortMap
	seen := map[int]bool{}
	for _, part := range parts {
		host, guest, ok := strings.Cut(strings.TrimSpace(part), ":")
		h, err1 := strconv.Atoi(host)
		g, err2 := strconv.Atoi(guest)
		if !ok || err1 != nil || err2 != nil || h < 1 || h > 65535 || g < 1 || g > 65535 {
			return nil, fmt.Errorf("%q is not node:guest with ports 1-65535 (e.g. \"8080:80,2222:22\")", part)
		}
		if seen[h] {
			return nil, fmt.Errorf("node port %d is given twice", h)
		}
		if h < api.MinNodePort {
			return nil, fmt.Errorf("node port %d is a privileged port of the host; use %d-65535", h, api.MinNodePort)
		}
		if (h >= api.VNCPortMin && h <= api.VNCPortMax) || (h >= api.ForwardPortMin && h <= api.ForwardPortMax) {
			return nil, fmt.Errorf("node port %d is in a range svc allocates itself (%d-%d, %d-%d)", h, api.VNCPortMin, api.VNCPortMax, api.ForwardPortMin, api.ForwardPortMax)
		}
		seen[h] = true
		out = append(out, raftfsm.PortMap{Host: h, Guest: g})
	}
	return out, nil
}

// resolveTimeout bounds reading a registry reference (and pulling a
// containerDisk) during a deploy.
const resolveTimeout = 10 * time.Minute

// resolveImage reads a registry reference named by a deploy, answering a
// registry's refusal with a Status that carries its reason.
func (s *Server) resolveImage(ctx context.Context, ns, ref string) (raftfsm.Image, error) {
	if _, err := ocidisk.ParseUserReference(ref, true, false); err != nil {
		return raftfsm.Image{}, badRequest("field %q: %s", "image", err)
	}
	rctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	img, err := s.registries.ResolveImage(rctx, ns, ref, owner(ctx))
	if err != nil {
		return raftfsm.Image{}, registryError(ref, err)
	}
	return img, nil
}
