package deploy

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// State is what a deploy reads of the replicated state (*raftfsm.FSM).
type State interface {
	VMConfig(ns, name string) (raftfsm.VMConfig, bool)
	Node(name string) (raftfsm.NodeView, bool)
	Image(ns, name string) (raftfsm.Image, bool)
	ISO(ns, name string) (raftfsm.Image, bool)
	SharedStorageOn(ns string) error
}

// ReadReference reads an image a registry reference names into the
// cluster (pulling what it must); its errors are answered as they are.
type ReadReference func(ctx context.Context, ns, ref string) (raftfsm.Image, error)

// Plan is a resolved deploy: what to place, how long to wait for it to
// run, and what to warn the caller of.
type Plan struct {
	scheduler.Placement
	Timeout  time.Duration
	Warnings []string
}

// Resolve checks request r of namespace ns field by field and merges it over
// its VM config (when it names one) and the defaults. The checks of the
// request itself come before any look-up, and the look-ups before a
// registry reference is read (which may pull it).
func Resolve(ctx context.Context, st State, readRef ReadReference, ns string, r api.DeployRequest) (Plan, error) {
	var cfg raftfsm.VMConfig
	if r.VMConfig != "" {
		zeroIsUnset(&r)
		if err := api.ValidateName("vmConfig", r.VMConfig, api.MaxVMConfigLen); err != nil {
			return Plan{}, field("vmConfig", "%s", err)
		}
		c, ok := st.VMConfig(ns, r.VMConfig)
		if !ok {
			return Plan{}, notFound("vmconfig %q not found in namespace %q", r.VMConfig, ns)
		}
		cfg = c
	}
	image := cmp.Or(r.Image, cfg.Image)
	if image == "" {
		return Plan{}, field("image", "image or vmConfig is required")
	}
	plan := Plan{Timeout: api.DefaultTimeoutMinutes * time.Minute}
	switch {
	case r.Name == "" || r.ShouldGenerateName:
		plan.NamePrefix = cmp.Or(r.Name, "vm")
		if err := api.ValidateName("name", plan.NamePrefix, api.MaxNameLen-6); err != nil {
			return Plan{}, field("name", "%s", err)
		}
	default:
		if err := api.ValidateName("name", r.Name, api.MaxNameLen); err != nil {
			return Plan{}, field("name", "%s", err)
		}
	}
	if err := r.Fields().Validate(); err != nil {
		return Plan{}, raftfsm.NewRuleError(raftfsm.ErrInvalid, err.Error())
	}
	cpu := cmp.Or(max(cfg.CPU, 0), api.DefaultCPU)
	if r.CPU != nil {
		cpu = *r.CPU
	}
	memGiB := cfg.MemoryGiB
	if r.Memory != nil {
		memGiB = *r.Memory
	}
	memGiB = cmp.Or(memGiB, api.DefaultMemoryGiB)
	tag := cmp.Or(r.Tag, cfg.Tag)
	// No tag to require: the VM goes anywhere, as without tagRequired
	// (published clients send it when a user ticks the box and names none).
	tagRequired := pick(r.TagRequired, cfg.TagRequired) && tag != ""
	reserved, err := parseReservedPorts(r.ReservedPorts)
	if err != nil {
		return Plan{}, field("reservedPorts", "%s", err)
	}
	if r.Timeout != nil {
		plan.Timeout = time.Duration(*r.Timeout * float64(time.Minute))
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
	node := cmp.Or(r.Node, cfg.Node)
	if node != "" {
		if n, ok := st.Node(node); !ok || n.Namespace != ns {
			return Plan{}, notFound("node %q not found in namespace %q", node, ns)
		}
	}
	img, source, err := imageOf(ctx, st, readRef, ns, image)
	if err != nil {
		return Plan{}, err
	}
	guestOS, isoDigest := img.OS, ""
	iso := cmp.Or(r.ISO, cfg.ISO)
	if iso != "" {
		i, ok := st.ISO(ns, iso)
		if !ok {
			return Plan{}, notFound("iso %q not found in namespace %q", iso, ns)
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
			return Plan{}, field("ttl", "%s", err)
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
		if err := st.SharedStorageOn(ns); err != nil {
			return Plan{}, err
		}
	}
	plan.MacOS = guestOS == raftfsm.OSMacOS
	plan.VM, plan.Arch, plan.Node, plan.Tag, plan.TagRequired = vm, img.Arch, node, tag, tagRequired
	plan.Scheduler = cmp.Or(r.Scheduler, cfg.Scheduler, api.SchedulerDefault)
	for _, rp := range reserved {
		if rp.Guest == 22 || rp.Guest == 5900 {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("guest port %d is already forwarded (ssh or screenshare); %d:%d forwards it again", rp.Guest, rp.Host, rp.Guest))
		}
	}
	return plan, nil
}

// imageOf finds the image a deploy names (reading a registry reference into
// the cluster) and returns it with the reference it came from, if any. An
// image without content yet is refused (409).
func imageOf(ctx context.Context, st State, readRef ReadReference, ns, image string) (raftfsm.Image, string, error) {
	var img raftfsm.Image
	var source string
	if api.IsRegistryReference(image) {
		var err error
		if img, err = readRef(ctx, ns, image); err != nil {
			return raftfsm.Image{}, "", err
		}
		source = img.Source
	} else {
		var ok bool
		if img, ok = st.Image(ns, image); !ok {
			return raftfsm.Image{}, "", notFound("image %q not found in namespace %q", image, ns)
		}
	}
	if !img.Usable() {
		return raftfsm.Image{}, "", raftfsm.NewRuleError(raftfsm.ErrConflict,
			fmt.Sprintf("image %q has no content yet (%s): its save is under way or failed", image, cmp.Or(img.State, api.ImageReady)))
	}
	return img, source, nil
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

func pick(v *bool, dflt bool) bool {
	if v != nil {
		return *v
	}
	return dflt
}

// field is a request field refused (400 naming it).
func field(name, format string, args ...any) error {
	return raftfsm.NewRuleError(raftfsm.ErrInvalid, fmt.Sprintf("field %q: %s", name, fmt.Sprintf(format, args...)))
}

func notFound(format string, args ...any) error {
	return raftfsm.NewRuleError(raftfsm.ErrNotFound, fmt.Sprintf(format, args...))
}
