package templates

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/raftfsm"
)

// fsmWith returns a replica's state after the commands.
func fsmWith(t *testing.T, cmds ...func() (raftfsm.Type, any)) *raftfsm.FSM {
	t.Helper()
	f := raftfsm.NewFSM(nil)
	for i, cmd := range cmds {
		typ, body := cmd()
		b, err := raftfsm.Encode(typ, body)
		if err != nil {
			t.Fatal(err)
		}
		c, err := raftfsm.Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if res := f.ApplyCommand(uint64(i+1), c); res.Err != nil {
			t.Fatalf("%s: %v", typ, res.Err)
		}
	}
	return f
}

func cmd(typ raftfsm.Type, body any) func() (raftfsm.Type, any) {
	return func() (raftfsm.Type, any) { return typ, body }
}

// The configs a node builds templates for are those of its own namespace
// (the only one whose VMs it runs), of a size it holds, whose image it
// holds: another namespace's warm configs take none of its slots.
func TestManager_desired_configs_of_the_nodes_namespace(t *testing.T) {
	now := time.Now().UTC()
	image := func(ns, name string) func() (raftfsm.Type, any) {
		return cmd(raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: name, Namespace: ns,
			Digest: "sha256:aa", SizeBytes: 10, Format: "qcow2"}, Holder: "n1"})
	}
	config := func(ns, name string, cpu int) func() (raftfsm.Type, any) {
		return cmd(raftfsm.TypeVMConfigCreate, raftfsm.VMConfigCreate{Config: raftfsm.VMConfig{Name: name, Namespace: ns,
			Image: "tiny", MemoryGiB: 1, VMOptions: raftfsm.VMOptions{CPU: cpu}, Warm: true}})
	}
	base := []func() (raftfsm.Type, any){
		cmd(raftfsm.TypeInit, raftfsm.TestInit("c1", now)),
		cmd(raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: "n1", Phase: api.PhaseReady, Time: now,
			NodeFacts: raftfsm.NodeFacts{Addr: "10.0.0.1", Arch: "amd64", Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 16 << 30}}}),
		cmd(raftfsm.TypeNamespaceCreate, raftfsm.NamespaceCreate{Name: "team", Time: now}),
		image(api.DefaultNamespace, "tiny"), image("team", "tiny"),
		config(api.DefaultNamespace, "ci", 1),
	}
	for i := range 40 { // another namespace's configs of 40 shapes, of the same image's content
		base = append(base, config("team", "flood"+string(rune('a'+i%26))+string(rune('a'+i/26)), 1+i%8))
	}
	cases := []struct {
		name   string
		extra  []func() (raftfsm.Type, any)
		wantNS string // the namespace whose configs' shapes are wanted
		want   int
	}{
		{name: "default_node", wantNS: api.DefaultNamespace, want: 1},
		{name: "node_moved_to_team", extra: []func() (raftfsm.Type, any){
			cmd(raftfsm.TypeNodeSetNamespace, raftfsm.NodeSetNamespace{Name: "n1", Namespace: "team"}),
		}, wantNS: "team", want: 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fsmWith(t, append(slices.Clone(base), tc.extra...)...)
			m := New(Config{Name: "n1", FSM: f, Driver: fake.New(hypervisor.DomainPrefix("n1")), Max: 4})
			want := m.desired()
			var keys []string
			for _, c := range f.WarmConfigs() {
				if sh, ok := f.WarmShape(c); ok && c.Namespace == tc.wantNS {
					keys = append(keys, sh.Key())
				}
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			if got := slices.Sorted(maps.Keys(want)); len(got) != tc.want || !slices.Equal(got, keys) {
				t.Fatalf("wanted shapes %v, want the %d of namespace %s: %v", got, tc.want, tc.wantNS, keys)
			}
		})
	}
}
