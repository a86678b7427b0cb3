package raftfsm

import (
	"slices"
	"testing"

	"github.com/svc-project/svc/api"
)

// Shared storage as the FSM applies it: turned on and off per namespace, a
// VM that asks for it refused where the namespace has none (403's kind) or
// on a node that does not offer it, turning it off refused while a VM uses
// it, and nodes' usage reports. Each refusal leaves the state as it was.
func TestSharedStorage_commands(t *testing.T) {
	shared := func(max int64) []byte {
		var ss *SharedStorage
		if max > 0 {
			ss = &SharedStorage{MaxBytes: max}
		}
		return mustEncode(t, TypeNamespaceSharedStorage, NamespaceSharedStorage{Namespace: api.DefaultNamespace, SharedStorage: ss})
	}
	offering := func(name string, offers bool) []byte {
		return mustEncode(t, TypeNodeUpsert, NodeUpsert{
			Name: name, Phase: api.PhaseReady, Time: t0,
			NodeFacts: NodeFacts{Addr: "10.0.0.1", APIAddr: "10.0.0.1:8443", RaftAddr: "10.0.0.1:7000", GossipAddr: "10.0.0.1:7946",
				Arch: "amd64", Version: "dev", Capacity: Capacity{CPU: 8, MemoryBytes: 16 << 30},
				SharedStorage: offers, SharedStorageWhy: map[bool]string{false: "no 9p in QEMU"}[offers]},
		})
	}
	sharingVM := func(name string, port int) []byte {
		return mustEncode(t, TypeVMCreate, VMCreate{VM: VM{
			Name: name, Namespace: api.DefaultNamespace, Node: "n1", Image: "mini", ImageDigest: "sha256:aa",
			VMOptions: VMOptions{CPU: 1, MemoryBytes: 1 << 30, SharedStorage: true}, IP: "10.0.0.1", SSHPort: port, VNCPort: port + 1, ScreensharePort: port + 2, CreatedAt: t0,
		}})
	}
	usage := func(node string, u map[string]int64) []byte {
		return mustEncode(t, TypeNodeSharedUsage, NodeSharedUsage{Node: node, Usage: u})
	}
	base := [][]byte{initCmd(t), offering("n1", true), imageCmd(t, "mini", "n1")}
	with := func(setup [][]byte, cmds ...[]byte) [][]byte { return slices.Concat(setup, cmds) } // no shared backing array
	on := with(base, shared(50<<30))
	for _, tc := range []struct {
		name    string
		setup   [][]byte
		cmd     []byte
		wantErr error
		check   func(*testing.T, *FSM)
	}{
		{name: "turned on", setup: base, cmd: shared(50 << 30), check: func(t *testing.T, f *FSM) {
			if ns, _ := f.Namespace(api.DefaultNamespace); ns.SharedStorage == nil || ns.SharedStorage.MaxBytes != 50<<30 {
				t.Fatalf("namespace %+v", ns)
			}
			if got := f.SharedStorageNamespaces(); got[api.DefaultNamespace] != 50<<30 {
				t.Fatalf("shared namespaces %v", got)
			}
		}},
		{name: "a bound under 1 GiB", setup: base, cmd: shared(1 << 20), wantErr: ErrInvalid},
		{name: "a bound over 16 TiB", setup: base, cmd: shared(17 << 40), wantErr: ErrInvalid},
		{name: "an unknown namespace", setup: base, cmd: mustEncode(t, TypeNamespaceSharedStorage, NamespaceSharedStorage{Namespace: "nope"}), wantErr: ErrNotFound},
		{name: "a VM asking for it where the namespace has none", setup: base, cmd: sharingVM("a", 22001), wantErr: ErrQuota},
		{name: "a VM asking for it", setup: on, cmd: sharingVM("a", 22001), check: func(t *testing.T, f *FSM) {
			if users := f.SharedStorageUsers("n1", api.DefaultNamespace); len(users) != 1 || users[0] != "a" {
				t.Fatalf("users %v", users)
			}
		}},
		{name: "on a node that does not offer it", setup: with(on, offering("n1", false)), cmd: sharingVM("a", 22001), wantErr: ErrConflict},
		{name: "turned off while a VM uses it", setup: with(on, sharingVM("a", 22001)), cmd: shared(0), wantErr: ErrConflict},
		{name: "turned off once its VMs are gone", setup: with(on, sharingVM("a", 22001), mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a"})), cmd: shared(0),
			check: func(t *testing.T, f *FSM) {
				if ns, _ := f.Namespace(api.DefaultNamespace); ns.SharedStorage != nil {
					t.Fatalf("still on: %+v", ns.SharedStorage)
				}
			}},
		{name: "a VM without it needs nothing", setup: with(base, offering("n1", false)), cmd: vmCreateCmd(t, "b", "n1", 1, 1<<30, 22011)},
		{name: "a usage report", setup: on, cmd: usage("n1", map[string]int64{api.DefaultNamespace: 1 << 20}), check: func(t *testing.T, f *FSM) {
			if n, _ := f.Node("n1"); n.SharedUsage[api.DefaultNamespace] != 1<<20 {
				t.Fatalf("usage %v", n.SharedUsage)
			}
		}},
		{name: "a negative usage", setup: on, cmd: usage("n1", map[string]int64{api.DefaultNamespace: -1}), wantErr: ErrInvalid},
		{name: "the usage of an unknown node", setup: on, cmd: usage("n9", map[string]int64{}), wantErr: ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) { runCommandCase(t, tc.setup, tc.cmd, tc.wantErr, tc.check) })
	}
}

// A shared-storage VM starts from no template: its folder is a device the
// template's saved memory does not have.
func TestSharedStorage_no_template_shape(t *testing.T) {
	vm := VM{ImageDigest: "sha256:aa", VMOptions: VMOptions{CPU: 1, MemoryBytes: 1 << 30}}
	if _, ok := vm.Shape(); !ok {
		t.Fatal("a plain VM has no shape")
	}
	vm.SharedStorage = true
	if _, ok := vm.Shape(); ok {
		t.Fatal("a shared-storage VM has a template shape")
	}
}
