package raftfsm

import (
	"slices"
	"testing"

	"github.com/svc-project/svc/api"
)

func TestHot_commands(t *testing.T) {
	// The shape of vmCreateCmd's VMs.
	key := Shape{ImageDigest: "sha256:aa", CPU: 1, MemoryBytes: 1 << 30}.Key()
	other := Shape{ImageDigest: "sha256:bb", CPU: 1, MemoryBytes: 1 << 30}.Key()
	guest := func(node, id, k string) HotGuest {
		return HotGuest{Key: k, Domain: HotDomainPrefix(node) + k + "." + id, ReadyAt: t0}
	}
	report := func(node string, gs ...HotGuest) []byte {
		return mustEncode(t, TypeNodeHot, NodeHot{Node: node, Guests: gs})
	}
	cfg := func(name string, warm bool, hot int) []byte {
		return mustEncode(t, TypeVMConfigCreate, VMConfigCreate{Config: VMConfig{Name: name, Namespace: api.DefaultNamespace, Image: "mini",
			MemoryGiB: 1, Warm: warm, Hot: hot, VMOptions: VMOptions{CPU: 1}}})
	}
	setHot := func(hot int) []byte {
		return mustEncode(t, TypeVMConfigSetHot, VMConfigSetHot{Namespace: api.DefaultNamespace, Name: "ci", Hot: hot})
	}
	vmOf := func(t *testing.T, f *FSM, name string) VM {
		t.Helper()
		vm, ok := f.VM(api.DefaultNamespace, name)
		if !ok {
			t.Fatalf("no vm %s", name)
		}
		return vm
	}
	node := func(t *testing.T, f *FSM, name string) *Node {
		t.Helper()
		n, _ := f.Node(name)
		return &n.Node
	}
	// Full, so that each case's append makes a setup of its own.
	pooled := slices.Clip(append(vmSetup(t), report("n1", guest("n1", "g1", key), guest("n1", "g2", other))))
	cases := []struct {
		name    string
		setup   [][]byte
		cmd     []byte
		wantErr error
		check   func(*testing.T, *FSM)
	}{
		{name: "a hot config", setup: vmSetup(t), cmd: cfg("ci", true, 2), check: func(t *testing.T, f *FSM) {
			if hs := f.HotConfigs(); len(hs) != 1 || hs[0].Hot != 2 {
				t.Fatalf("hot configs %+v", hs)
			}
		}},
		{name: "hot without warm", setup: vmSetup(t), cmd: cfg("ci", false, 2), wantErr: ErrInvalid},
		{name: "hot past its bound", setup: vmSetup(t), cmd: cfg("ci", true, MaxHotPerConfig+1), wantErr: ErrInvalid},
		{name: "hot set", setup: append(vmSetup(t), cfg("ci", true, 0)), cmd: setHot(3), check: func(t *testing.T, f *FSM) {
			if c, _ := f.VMConfig(api.DefaultNamespace, "ci"); c.Hot != 3 {
				t.Fatalf("hot %d", c.Hot)
			}
		}},
		{name: "hot set on a cold config", setup: append(vmSetup(t), cfg("ci", false, 0)), cmd: setHot(1), wantErr: ErrInvalid},
		{name: "hot set negative", setup: append(vmSetup(t), cfg("ci", true, 0)), cmd: setHot(-1), wantErr: ErrInvalid},
		{name: "turned cold, the pool goes", setup: append(vmSetup(t), cfg("ci", true, 2)),
			cmd: mustEncode(t, TypeVMConfigSetWarm, VMConfigSetWarm{Namespace: api.DefaultNamespace, Name: "ci", Warm: false}),
			check: func(t *testing.T, f *FSM) {
				if c, _ := f.VMConfig(api.DefaultNamespace, "ci"); c.Hot != 0 {
					t.Fatalf("hot %d on a cold config", c.Hot)
				}
			}},
		{name: "guests reported", setup: vmSetup(t), cmd: report("n1", guest("n1", "g1", key), guest("n1", "g2", key)), check: func(t *testing.T, f *FSM) {
			if n := node(t, f, "n1"); n.HotFree(key) != 2 {
				t.Fatalf("free %d: %+v", n.HotFree(key), n.Hot)
			}
		}},
		{name: "a guest of another node's prefix", setup: vmSetup(t), cmd: report("n1", guest("n2", "g1", key)), wantErr: ErrInvalid},
		{name: "a guest twice", setup: vmSetup(t), cmd: report("n1", guest("n1", "g1", key), guest("n1", "g1", key)), wantErr: ErrInvalid},
		{name: "too many guests", setup: vmSetup(t), cmd: report("n1", make([]HotGuest, MaxHotPerNode+1)...), wantErr: ErrInvalid},
		{name: "guests of an unknown node", setup: vmSetup(t), cmd: report("n9"), wantErr: ErrNotFound},
		{name: "a deploy of the shape claims a guest", setup: pooled, cmd: vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), check: func(t *testing.T, f *FSM) {
			if vm := vmOf(t, f, "a"); vm.Domain != guest("n1", "g1", key).Domain {
				t.Fatalf("domain %q", vm.Domain)
			}
			if n := node(t, f, "n1"); n.HotFree(key) != 0 || n.HotFree(other) != 1 {
				t.Fatalf("left %+v", n.Hot)
			}
		}},
		{name: "a deploy of another shape claims none", setup: pooled, cmd: vmCreateCmd(t, "a", "n1", 2, 1<<30, 22001), check: func(t *testing.T, f *FSM) {
			if vm := vmOf(t, f, "a"); vm.Domain != "" {
				t.Fatalf("domain %q", vm.Domain)
			}
		}},
		{name: "a deploy elsewhere claims none", setup: append(pooled, upsertCmd(t, "n2")), cmd: vmCreateCmd(t, "a", "n2", 1, 1<<30, 22001), check: func(t *testing.T, f *FSM) {
			if vm := vmOf(t, f, "a"); vm.Domain != "" || node(t, f, "n1").HotFree(key) != 1 {
				t.Fatalf("domain %q", vm.Domain)
			}
		}},
		{name: "a deploy naming a domain of its own", setup: pooled, cmd: mustEncode(t, TypeVMCreate, VMCreate{VM: VM{
			Name: "a", Namespace: api.DefaultNamespace, Node: "n1", Image: "mini", ImageDigest: "sha256:aa", Domain: "svc.n1.default.victim",
			VMOptions: VMOptions{CPU: 2, MemoryBytes: 1 << 30}, IP: "10.0.0.1", SSHPort: 22001, VNCPort: 22002, ScreensharePort: 22003, CreatedAt: t0,
		}}), check: func(t *testing.T, f *FSM) {
			if vm := vmOf(t, f, "a"); vm.Domain != "" {
				t.Fatalf("domain %q", vm.Domain)
			}
		}},
		{name: "two deploys never get one guest", setup: append(pooled, vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)),
			cmd: vmCreateCmd(t, "b", "n1", 1, 1<<30, 22011), check: func(t *testing.T, f *FSM) {
				if vm := vmOf(t, f, "b"); vm.Domain != "" {
					t.Fatalf("b got %q too", vm.Domain)
				}
			}},
		{name: "a report made before the claim does not offer the guest again",
			setup: append(pooled, vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a"})),
			cmd:   report("n1", guest("n1", "g1", key), guest("n1", "g3", key)), check: func(t *testing.T, f *FSM) {
				if n := node(t, f, "n1"); len(n.Hot) != 1 || n.Hot[0].Domain != guest("n1", "g3", key).Domain {
					t.Fatalf("free %+v", n.Hot)
				}
			}},
		{name: "a vm started from a hot guest", setup: append(pooled, vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)),
			cmd: mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning, StartedFrom: StartedFromHot}),
			check: func(t *testing.T, f *FSM) {
				if vm := vmOf(t, f, "a"); vm.StartedFrom != StartedFromHot {
					t.Fatalf("startedFrom %q", vm.StartedFrom)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCommandCase(t, c.setup, c.cmd, c.wantErr, c.check) })
	}
}
