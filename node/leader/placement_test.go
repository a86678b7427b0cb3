package leader

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/scheduler"
	"github.com/svc-project/svc/testkit/fsmtest"
)

// fsmRaft applies commands straight to an FSM, as a one-peer Raft would,
// and has no membership.
type fsmRaft struct{ *fsmtest.Applier }

var errNoRaft = errors.New("not in this test")

func (*fsmRaft) Servers(context.Context) ([]raftstore.Server, error) { return nil, errNoRaft }
func (*fsmRaft) AddVoter(context.Context, string, string) error      { return errNoRaft }
func (*fsmRaft) AddNonvoter(context.Context, string, string) error   { return errNoRaft }
func (*fsmRaft) RemoveServer(context.Context, string) error          { return errNoRaft }

// cluster is a leader over a state of n READY nodes of the default
// namespace and one image.
func cluster(tb testing.TB, n int) (*Leader, *fsmRaft) {
	tb.Helper()
	r := &fsmRaft{fsmtest.New()}
	apply := func(t raftfsm.Type, body any) {
		if _, err := r.ApplyCommand(context.Background(), t, body); err != nil {
			tb.Fatal(err)
		}
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	apply(raftfsm.TypeInit, raftfsm.TestInit("c", t0))
	for i := range n {
		apply(raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: fmt.Sprintf("n%05d", i), Phase: api.PhaseReady, NodeFacts: raftfsm.NodeFacts{
			Addr: fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 256 << 30},
		}})
	}
	apply(raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: "mini", Namespace: api.DefaultNamespace, Digest: "sha256:aa", Format: "qcow2"}, Holder: "n00000"})
	return New(Config{Name: "n00000", FSM: r.FSM, Raft: r}), r
}

func placement(name string, cpu int, mem int64) scheduler.Placement {
	return scheduler.Placement{VM: raftfsm.VM{Name: name, Namespace: api.DefaultNamespace, Image: "mini", ImageDigest: "sha256:aa",
		VMOptions: raftfsm.VMOptions{CPU: cpu, MemoryBytes: mem}}}
}

// Placements go to the node holding the image while it has room, then
// spread over the others (default strategy); each VM gets ports of its own.
func TestPlace_holder_first_then_spread(t *testing.T) {
	l, _ := cluster(t, 4)
	seen := map[string]int{}
	ports := map[string]bool{}
	for i := range 11 {
		vm, err := l.Place(context.Background(), placement(fmt.Sprintf("vm-%d", i), 8, 32<<30))
		if err != nil {
			t.Fatal(err)
		}
		seen[vm.Node]++
		for _, p := range []int{vm.VNCPort, vm.SSHPort, vm.ScreensharePort} {
			key := fmt.Sprintf("%s:%d", vm.Node, p)
			if p == 0 || ports[key] {
				t.Fatalf("port %s given twice or not at all: %+v", key, vm)
			}
			ports[key] = true
		}
	}
	if seen["n00000"] != 8 || len(seen) != 4 {
		t.Fatalf("placements %v: want 8 on the image's holder (its room), the rest spread", seen)
	}
	if _, err := l.Place(context.Background(), placement("huge", 65, 1<<30)); !errors.Is(err, raftfsm.ErrConflict) {
		t.Fatalf("a VM no node fits: %v", err)
	}
}

// BenchmarkLeaderPlace_10000_nodes is the leader's whole placement over
// 10,000 nodes: the scheduler's view of the replica, the scheduler, the
// ports and the VM's create applied to the state.
func BenchmarkLeaderPlace_10000_nodes(b *testing.B) {
	l, _ := cluster(b, 10000)
	r := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		if _, err := l.Place(context.Background(), placement(fmt.Sprintf("vm-%d", i), 1+r.IntN(4), int64(1+r.IntN(8))<<30)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "placements/s")
}

// The leader's view, brought up to date node by node from the replica's
// journal, places like a view read afresh from the replica, whatever
// changed in between: VMs created and deleted, nodes tagged, cordoned, NOT
// READY, dedicated to another namespace, holding templates, hot guests and
// images, removed, and changes that touch no node.
func TestPlace_view_follows_the_replica(t *testing.T) {
	l, fr := cluster(t, 30)
	r := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	apply := func(typ raftfsm.Type, body any) { _, _ = fr.ApplyCommand(ctx, typ, body) } // a refused change is a change too
	apply(raftfsm.TypeNamespaceCreate, raftfsm.NamespaceCreate{Name: "other"})
	// Probes and templates share a few shapes, so that probes find nodes
	// with their template.
	shaped := func(name string) scheduler.Placement {
		return placement(name, 1+r.IntN(2), int64(1+r.IntN(2))<<30)
	}
	templateKey := func() string {
		vm := shaped("t").VM
		sh, _ := vm.Shape()
		return sh.Key()
	}
	var vms []string
	for step := range 3000 {
		node := fmt.Sprintf("n%05d", r.IntN(30))
		switch r.IntN(15) {
		case 0, 1, 2:
			vm, err := l.Place(ctx, placement(fmt.Sprintf("vm-%d", step), 1+r.IntN(16), int64(1+r.IntN(64))<<30))
			if err == nil {
				vms = append(vms, vm.Name)
			}
		case 3, 4:
			if len(vms) > 0 {
				i := r.IntN(len(vms))
				apply(raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: api.DefaultNamespace, Name: vms[i]})
				vms = slices.Delete(vms, i, i+1)
			}
		case 5:
			apply(raftfsm.TypeNodeTag, raftfsm.NodeTag{Namespace: api.DefaultNamespace, Name: node, Tag: "ssd"})
		case 6:
			apply(raftfsm.TypeNodeCordon, raftfsm.NodeCordon{Namespace: api.DefaultNamespace, Name: node, Cordoned: r.IntN(2) == 0})
		case 7:
			apply(raftfsm.TypeNodeSetPhase, raftfsm.NodeSetPhase{Name: node, Phase: []string{api.PhaseReady, api.PhaseNotReady}[r.IntN(2)]})
		case 8:
			apply(raftfsm.TypeNodeSetNamespace, raftfsm.NodeSetNamespace{Name: node, Namespace: []string{api.DefaultNamespace, "other"}[r.IntN(2)]})
		case 9:
			apply(raftfsm.TypeNodeTemplates, raftfsm.NodeTemplates{Node: node, Templates: []raftfsm.Template{{Key: templateKey()}}})
		case 10:
			apply(raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: "sha256:aa", Node: node})
		case 11:
			apply(raftfsm.TypeJobCreate, raftfsm.JobCreate{})
		case 12: // a node joins, or one of the first changes its facts
			apply(raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: fmt.Sprintf("n%05d", r.IntN(40)), Phase: api.PhaseReady, NodeFacts: raftfsm.NodeFacts{
				Capacity: raftfsm.Capacity{CPU: 8 + r.IntN(64), MemoryBytes: int64(8+r.IntN(256)) << 30},
			}})
		case 14: // hot guests reported, claimed by the placements of their shape
			apply(raftfsm.TypeNodeHot, raftfsm.NodeHot{Node: node, Guests: []raftfsm.HotGuest{{Key: templateKey(), Domain: fmt.Sprintf("%sg%d", raftfsm.HotDomainPrefix(node), step)}}})
		case 13:
			apply(raftfsm.TypeNodeRemove, raftfsm.NodeRemove{Name: fmt.Sprintf("n%05d", 30+r.IntN(10))})
		}
		pl := placement("probe", 1+r.IntN(16), int64(1+r.IntN(64))<<30)
		if r.IntN(2) == 0 {
			pl = shaped("probe")
		}
		if r.IntN(3) == 0 {
			pl.Tag = "ssd"
		}
		req := pl.Request()
		got, gotErr := l.schedule(pl.VM, req)
		want, wantErr := New(Config{Name: "n00000", FSM: fr.FSM, Raft: fr}).schedule(pl.VM, req)
		if got != want || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("step %d: the kept view chose %q (%v), a fresh one %q (%v)", step, got, gotErr, want, wantErr)
		}
	}
	if len(vms) == 0 {
		t.Fatal("no VM was placed: the test placed nothing")
	}
}
