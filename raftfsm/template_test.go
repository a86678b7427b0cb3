package raftfsm

import (
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
)

func TestTemplates_commands(t *testing.T) {
	shape := Shape{ImageDigest: "sha256:aa", ImageFormat: "qcow2", CPU: 1, MemoryBytes: 1 << 30}
	cfg := func(name string, mod func(*VMConfig)) []byte {
		c := VMConfig{Name: name, Namespace: api.DefaultNamespace, Image: "mini", MemoryGiB: 1, VMOptions: VMOptions{CPU: 1}}
		if mod != nil {
			mod(&c)
		}
		return mustEncode(t, TypeVMConfigCreate, VMConfigCreate{Config: c})
	}
	warm := func(c *VMConfig) { c.Warm = true }
	saving := append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), // a save under way: image "saving" has no content yet
		mustEncode(t, TypeVMImageOp, VMImageOp{Namespace: api.DefaultNamespace, VM: "a", Kind: OpSave, Image: "saving"}))
	cases := []struct {
		name    string
		setup   [][]byte
		cmd     []byte
		wantErr error
		check   func(*testing.T, *FSM)
	}{
		{name: "warm config created", setup: vmSetup(t), cmd: cfg("ci", warm), check: func(t *testing.T, f *FSM) {
			c, _ := f.VMConfig(api.DefaultNamespace, "ci")
			if sh, ok := f.WarmShape(c); !ok || sh != shape {
				t.Fatalf("warm shape %+v %v, want %+v", sh, ok, shape)
			}
			if ws := f.WarmConfigs(); len(ws) != 1 || ws[0].Name != "ci" {
				t.Fatalf("warm configs %+v", ws)
			}
		}},
		{name: "warm on an image not ready", setup: saving, cmd: cfg("ci", func(c *VMConfig) { c.Warm, c.Image = true, "saving" }), wantErr: ErrConflict},
		{name: "warm on a registry reference", setup: vmSetup(t), cmd: cfg("ci", func(c *VMConfig) { c.Warm, c.Image = true, "r:5000/a/b:1" }), wantErr: ErrInvalid},
		{name: "warm bigger than every node", setup: vmSetup(t), cmd: cfg("ci", func(c *VMConfig) { c.Warm, c.MemoryGiB = true, 4096 }), wantErr: ErrInvalid},
		{name: "warm with more CPUs than every node", setup: vmSetup(t), cmd: cfg("ci", func(c *VMConfig) { c.Warm, c.CPU = true, 64 }), wantErr: ErrInvalid},
		{name: "warm turned on bigger than every node", setup: append(vmSetup(t), cfg("ci", func(c *VMConfig) { c.MemoryGiB = 4096 })),
			cmd: mustEncode(t, TypeVMConfigSetWarm, VMConfigSetWarm{Namespace: api.DefaultNamespace, Name: "ci", Warm: true}), wantErr: ErrInvalid},
		{name: "warm as big as a node", setup: vmSetup(t), cmd: cfg("ci", func(c *VMConfig) { c.Warm, c.MemoryGiB, c.CPU = true, 16, 8 })},
		{name: "warm with gpu", setup: vmSetup(t), cmd: cfg("ci", func(c *VMConfig) { c.Warm, c.GPUPassthrough = true, true }), wantErr: ErrInvalid},
		{name: "warm with shared storage", setup: vmSetup(t), cmd: cfg("ci", func(c *VMConfig) { c.Warm, c.SharedStorage = true, true }), wantErr: ErrInvalid},
		{name: "warm turned on", setup: append(vmSetup(t), cfg("ci", nil)), cmd: mustEncode(t, TypeVMConfigSetWarm, VMConfigSetWarm{Namespace: api.DefaultNamespace, Name: "ci", Warm: true}),
			check: func(t *testing.T, f *FSM) {
				if c, _ := f.VMConfig(api.DefaultNamespace, "ci"); !c.Warm {
					t.Fatal("not warm")
				}
			}},
		{name: "warm on an unknown config", setup: vmSetup(t), cmd: mustEncode(t, TypeVMConfigSetWarm, VMConfigSetWarm{Namespace: api.DefaultNamespace, Name: "ci", Warm: true}), wantErr: ErrNotFound},
		{name: "templates reported", setup: vmSetup(t), cmd: mustEncode(t, TypeNodeTemplates, NodeTemplates{Node: "n1", Templates: []Template{{Key: shape.Key(), Shape: shape, SizeBytes: 5}}}),
			check: func(t *testing.T, f *FSM) {
				if ws := f.WarmNodes(shape.Key()); len(ws) != 1 || ws[0] != "n1" {
					t.Fatalf("warm nodes %v", ws)
				}
			}},
		{name: "templates of an unknown node", setup: vmSetup(t), cmd: mustEncode(t, TypeNodeTemplates, NodeTemplates{Node: "n9"}), wantErr: ErrNotFound},
		{name: "a template misnamed", setup: vmSetup(t), cmd: mustEncode(t, TypeNodeTemplates, NodeTemplates{Node: "n1", Templates: []Template{{Key: "k", Shape: shape}}}), wantErr: ErrInvalid},
		{name: "too many templates", setup: vmSetup(t), cmd: mustEncode(t, TypeNodeTemplates, NodeTemplates{Node: "n1", Templates: make([]Template, MaxTemplatesPerNode+1)}), wantErr: ErrInvalid},
		{name: "a vm started from a template", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)),
			cmd: mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning, StartedFrom: StartedFromTemplate}),
			check: func(t *testing.T, f *FSM) {
				if vm, _ := f.VM(api.DefaultNamespace, "a"); vm.StartedFrom != StartedFromTemplate {
					t.Fatalf("startedFrom %q", vm.StartedFrom)
				}
			}},
		{name: "a vm started from elsewhere", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)),
			cmd: mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning, StartedFrom: "magic"}), wantErr: ErrInvalid},
		{name: "a vm's identity reported", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)),
			cmd: mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning,
				Identity: &IdentityReport{State: IdentityFailed, Message: strings.Repeat("x", 5000)}}),
			check: func(t *testing.T, f *FSM) {
				vm, _ := f.VM(api.DefaultNamespace, "a")
				if vm.Identity == nil || vm.Identity.State != IdentityFailed || len(vm.Identity.Message) != maxIdentityMessage {
					t.Fatalf("identity %+v", vm.Identity)
				}
			}},
		{name: "an unknown identity state", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)),
			cmd: mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning,
				Identity: &IdentityReport{State: "shared"}}), wantErr: ErrInvalid,
			check: func(t *testing.T, f *FSM) {
				if vm, _ := f.VM(api.DefaultNamespace, "a"); vm.Status == VMRunning || vm.Identity != nil {
					t.Fatalf("half applied: %+v", vm)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCommandCase(t, c.setup, c.cmd, c.wantErr, c.check) })
	}
}
