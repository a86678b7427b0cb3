package deploy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// The replicated state is what production resolves against.
var _ State = (*raftfsm.FSM)(nil)

const ns = "team"

// state is a replicated state of one namespace, held in maps.
type state struct {
	configs map[string]raftfsm.VMConfig
	nodes   map[string]raftfsm.NodeView
	images  map[string]raftfsm.Image
	isos    map[string]raftfsm.Image
	shared  error
}

func (s *state) VMConfig(n, name string) (raftfsm.VMConfig, bool) {
	c, ok := s.configs[name]
	return c, ok && n == ns
}

func (s *state) Node(name string) (raftfsm.NodeView, bool) {
	n, ok := s.nodes[name]
	return n, ok
}

func (s *state) Image(n, name string) (raftfsm.Image, bool) {
	i, ok := s.images[name]
	return i, ok && n == ns
}

func (s *state) ISO(n, name string) (raftfsm.Image, bool) {
	i, ok := s.isos[name]
	return i, ok && n == ns
}

func (s *state) SharedStorageOn(string) error { return s.shared }

var mini = raftfsm.Image{Name: "mini", Namespace: ns, Digest: "sha256:aa", Format: "qcow2", Arch: "amd64", VirtualSize: 1 << 30}

func newState() *state {
	n := raftfsm.NodeView{}
	n.Name, n.Namespace = "n1", ns
	other := raftfsm.NodeView{}
	other.Name, other.Namespace = "n2", "elsewhere"
	cfg := raftfsm.VMConfig{Name: "ci", Namespace: ns, Image: "mini", MemoryGiB: 0.5, Tag: "fast", TagRequired: true, Scheduler: api.SchedulerMostAllocated}
	cfg.CPU = 2
	bare := raftfsm.VMConfig{Name: "bare", Namespace: ns, Image: "mini"}
	legacy := raftfsm.VMConfig{Name: "legacy", Namespace: ns, Image: "mini", MemoryGiB: 1}
	legacy.LegacyIO = true
	return &state{
		configs: map[string]raftfsm.VMConfig{"ci": cfg, "bare": bare, "legacy": legacy},
		nodes:   map[string]raftfsm.NodeView{"n1": n, "n2": other},
		images:  map[string]raftfsm.Image{"mini": mini, "saving": {Name: "saving", Namespace: ns, State: raftfsm.ImageUpdating}},
		isos:    map[string]raftfsm.Image{"macos": {Name: "macos", Namespace: ns, Digest: "sha256:ee", OS: raftfsm.OSMacOS}},
	}
}

// noRegistry fails the test if a registry reference is read.
func noRegistry(t *testing.T) ReadReference {
	return func(context.Context, string, string) (raftfsm.Image, error) {
		t.Error("a registry reference was read")
		return raftfsm.Image{}, errors.New("no registry here")
	}
}

func intp(v int) *int           { return &v }
func floatp(v float64) *float64 { return &v }
func boolp(v bool) *bool        { return &v }
func gib(v float64) int64       { return int64(v * (1 << 30)) }
func resolve(t *testing.T, r api.DeployRequest) (Plan, error) {
	t.Helper()
	return Resolve(context.Background(), newState(), noRegistry(t), ns, r)
}

func TestResolve_merges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   api.DeployRequest
		check func(p Plan) string // "" when right, else what is wrong
	}{
		{"an image alone takes the defaults", api.DeployRequest{Image: "mini", Name: "a"}, func(p Plan) string {
			if p.VM.CPU != api.DefaultCPU || p.VM.MemoryBytes != gib(api.DefaultMemoryGiB) || p.Scheduler != api.SchedulerDefault ||
				p.Timeout != api.DefaultTimeoutMinutes*time.Minute || p.VM.ImageDigest != mini.Digest || p.Arch != "amd64" || p.VM.DiskBytes != 1<<30 {
				return "not the defaults"
			}
			return ""
		}},
		{"a config's values", api.DeployRequest{VMConfig: "ci", Name: "a"}, func(p Plan) string {
			if p.VM.CPU != 2 || p.VM.MemoryBytes != gib(0.5) || p.Tag != "fast" || !p.TagRequired || p.Scheduler != api.SchedulerMostAllocated || p.VM.VMConfig != "ci" {
				return "not the config's"
			}
			return ""
		}},
		{"zeros published clients send stand for unset", api.DeployRequest{VMConfig: "ci", Name: "a", CPU: intp(0), Memory: floatp(0), TagRequired: boolp(false)}, func(p Plan) string {
			if p.VM.CPU != 2 || p.VM.MemoryBytes != gib(0.5) || !p.TagRequired {
				return "the zeros overrode the config"
			}
			return ""
		}},
		{"the request over its config", api.DeployRequest{VMConfig: "ci", Name: "a", CPU: intp(4), Memory: floatp(2), Tag: "gpu"}, func(p Plan) string {
			if p.VM.CPU != 4 || p.VM.MemoryBytes != gib(2) || p.Tag != "gpu" {
				return "the request did not win"
			}
			return ""
		}},
		{"no tag to require", api.DeployRequest{Image: "mini", Name: "a", TagRequired: boolp(true)}, func(p Plan) string {
			if p.TagRequired {
				return "a tag is required with none named"
			}
			return ""
		}},
		{"a generated name", api.DeployRequest{Image: "mini", Name: "web", ShouldGenerateName: true}, func(p Plan) string {
			if p.NamePrefix != "web" || p.VM.Name != "web" && p.VM.Name != "" {
				return "no name prefix"
			}
			return ""
		}},
		{"no name: a generated one", api.DeployRequest{Image: "mini"}, func(p Plan) string {
			if p.NamePrefix != "vm" {
				return "no name prefix"
			}
			return ""
		}},
		{"reserved ports, one of them forwarded already", api.DeployRequest{Image: "mini", Name: "a", ReservedPorts: "18080:80, 12222:22"}, func(p Plan) string {
			if len(p.VM.ReservedPorts) != 2 || p.VM.ReservedPorts[1] != (raftfsm.PortMap{Host: 12222, Guest: 22}) || len(p.Warnings) != 1 {
				return "not the ports and one warning"
			}
			return ""
		}},
		{"a TTL and a timeout", api.DeployRequest{Image: "mini", Name: "a", TTL: "1h", Timeout: floatp(2.5)}, func(p Plan) string {
			if p.VM.TTLSeconds != 3600 || p.Timeout != 150*time.Second {
				return "not the TTL and timeout"
			}
			return ""
		}},
		{"a macOS installer makes a macOS guest", api.DeployRequest{Image: "mini", Name: "a", ISO: "macos"}, func(p Plan) string {
			if !p.MacOS || p.VM.OS != raftfsm.OSMacOS || p.VM.ISODigest != "sha256:ee" {
				return "not a macOS guest"
			}
			return ""
		}},
		{"a pinned node of the namespace", api.DeployRequest{Image: "mini", Name: "a", Node: "n1", GPUPassthrough: boolp(true)}, func(p Plan) string {
			if p.Node != "n1" || p.VM.GPU != 1 {
				return "not pinned, or no GPU"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := resolve(t, tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if what := tc.check(p); what != "" {
				t.Fatalf("%s: %+v", what, p)
			}
		})
	}
}

func TestResolve_refuses(t *testing.T) {
	errShared := raftfsm.NewRuleError(raftfsm.ErrQuota, `namespace "team" has no shared storage`)
	for _, tc := range []struct {
		name   string
		req    api.DeployRequest
		shared error
		kind   error
		says   string
	}{
		{"neither image nor config", api.DeployRequest{Name: "a"}, nil, raftfsm.ErrInvalid, `field "image"`},
		{"an unknown config", api.DeployRequest{VMConfig: "nope", Name: "a"}, nil, raftfsm.ErrNotFound, `vmconfig "nope" not found`},
		{"a bad config name", api.DeployRequest{VMConfig: "Bad Name", Name: "a"}, nil, raftfsm.ErrInvalid, `field "vmConfig"`},
		{"a bad name", api.DeployRequest{Image: "mini", Name: "Bad_Name"}, nil, raftfsm.ErrInvalid, `field "name"`},
		{"bad reserved ports", api.DeployRequest{Image: "mini", Name: "a", ReservedPorts: "80"}, nil, raftfsm.ErrInvalid, `field "reservedPorts"`},
		{"a privileged node port", api.DeployRequest{Image: "mini", Name: "a", ReservedPorts: "80:80"}, nil, raftfsm.ErrInvalid, "privileged"},
		{"a node of another namespace", api.DeployRequest{Image: "mini", Name: "a", Node: "n2"}, nil, raftfsm.ErrNotFound, `node "n2" not found in namespace "team"`},
		{"an unknown image", api.DeployRequest{Image: "nope", Name: "a"}, nil, raftfsm.ErrNotFound, `image "nope" not found`},
		{"an image without content", api.DeployRequest{Image: "saving", Name: "a"}, nil, raftfsm.ErrConflict, "has no content yet (Updating)"},
		{"an unknown ISO", api.DeployRequest{Image: "mini", Name: "a", ISO: "nope"}, nil, raftfsm.ErrNotFound, `iso "nope" not found`},
		{"a bad TTL", api.DeployRequest{Image: "mini", Name: "a", TTL: "soon"}, nil, raftfsm.ErrInvalid, `field "ttl"`},
		{"shared storage the namespace does not offer", api.DeployRequest{Image: "mini", Name: "a", SharedStorage: boolp(true)}, errShared, raftfsm.ErrQuota, "no shared storage"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newState()
			st.shared = tc.shared
			_, err := Resolve(context.Background(), st, noRegistry(t), ns, tc.req)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want one of kind %v that says %q", err, tc.kind, tc.says)
			}
		})
	}
}

// A registry reference is read only once the request itself passed its
// checks, and the reader's error is the answer, unchanged.
func TestResolve_registry_reference(t *testing.T) {
	errRegistry := errors.New("registry says: denied")
	var read []string
	readRef := func(_ context.Context, n, ref string) (raftfsm.Image, error) {
		read = append(read, ref)
		if ref == "registry.example/team/bad:1" {
			return raftfsm.Image{}, errRegistry
		}
		return raftfsm.Image{Name: "pulled", Namespace: n, Digest: "sha256:bb", Source: ref}, nil
	}
	if _, err := Resolve(context.Background(), newState(), readRef, ns, api.DeployRequest{Image: "registry.example/team/disk:1", Name: "Bad_Name"}); !errors.Is(err, raftfsm.ErrInvalid) || len(read) != 0 {
		t.Fatalf("a bad name with a reference: %v, read %v", err, read)
	}
	if _, err := Resolve(context.Background(), newState(), readRef, ns, api.DeployRequest{Image: "registry.example/team/bad:1", Name: "a"}); err != errRegistry {
		t.Fatalf("the registry's refusal came back as %v", err)
	}
	p, err := Resolve(context.Background(), newState(), readRef, ns, api.DeployRequest{Image: "registry.example/team/disk:1", Name: "a"})
	if err != nil || p.VM.Image != "pulled" || p.VM.ImageSource != "registry.example/team/disk:1" || p.VM.ImageDigest != "sha256:bb" {
		t.Fatalf("a deploy from a reference: %+v %v", p.VM, err)
	}
}

// A VM deployed from a config has the shape that config's warm template is
// built in, so the template starts it.
func TestResolve_shape_is_the_warm_shape(t *testing.T) {
	st := newState()
	for _, name := range []string{"ci", "bare", "legacy"} {
		t.Run(name, func(t *testing.T) {
			cfg := st.configs[name]
			want, err := cfg.WarmShape(mini)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Resolve(context.Background(), st, noRegistry(t), ns, api.DeployRequest{VMConfig: name, Name: "a"})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := p.VM.Shape()
			if !ok || got != want {
				t.Fatalf("the deployed VM's shape %+v (%v), the warm config's %+v", got, ok, want)
			}
		})
	}
}
