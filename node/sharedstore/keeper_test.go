package sharedstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/fsmtest"
)

// applier applies commands as a one-peer Raft would, and keeps the usage
// reports it saw.
type applier struct {
	*fsmtest.Applier
	reports []raftfsm.NodeSharedUsage
}

func (a *applier) Apply(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	if u, ok := body.(raftfsm.NodeSharedUsage); ok {
		a.reports = append(a.reports, u)
	}
	return a.Applier.Apply(ctx, t, body)
}

// The keeper reports a folder's usage when it moved, refuses to clear a
// folder a VM of the node uses, and removes the folder of a namespace whose
// shared storage was turned off.
func TestKeeper_report_clear_remove(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	a := &applier{Applier: fsmtest.New()}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c", t0))
	a.Must(t, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: "n1", Phase: api.PhaseReady, Time: t0, NodeFacts: raftfsm.NodeFacts{
		Addr: "10.0.0.1", Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 8 << 30}, SharedStorage: true}})
	a.Must(t, raftfsm.TypeNamespaceSharedStorage, raftfsm.NamespaceSharedStorage{Namespace: api.DefaultNamespace, SharedStorage: &raftfsm.SharedStorage{MaxBytes: 1 << 30}})
	k := NewKeeper(KeeperConfig{Name: "n1", Store: s, FSM: a.FSM, Proposer: a})
	if err := s.Ensure(ctx, api.DefaultNamespace, 64<<20); err != nil {
		t.Fatal(err)
	}
	if err := k.pass(ctx); err != nil || len(a.reports) != 1 {
		t.Fatalf("first pass: %v, reports %v", err, a.reports)
	}
	if err := k.pass(ctx); err != nil || len(a.reports) != 1 {
		t.Fatalf("a pass with nothing moved reported again: %v, %v", err, a.reports)
	}
	if err := os.WriteFile(filepath.Join(s.Path(api.DefaultNamespace), "f"), make([]byte, 4<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := k.pass(ctx); err != nil || len(a.reports) != 2 || a.reports[1].Usage[api.DefaultNamespace] < 4<<20 {
		t.Fatalf("after 4 MiB: %v, reports %v", err, a.reports)
	}
	if n, _ := a.FSM.Node("n1"); n.SharedUsage[api.DefaultNamespace] < 4<<20 {
		t.Fatalf("the node record's usage: %v", n.SharedUsage)
	}

	a.Must(t, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: "mini", Namespace: api.DefaultNamespace, Digest: "sha256:aa", Format: "qcow2"}, Holder: "n1"})
	a.Must(t, raftfsm.TypeVMCreate, raftfsm.VMCreate{VM: raftfsm.VM{Name: "v", Namespace: api.DefaultNamespace, Node: "n1", Image: "mini", ImageDigest: "sha256:aa",
		VMOptions: raftfsm.VMOptions{CPU: 1, MemoryBytes: 1 << 30, SharedStorage: true}, IP: "10.0.0.1", SSHPort: 22001, VNCPort: 5901, ScreensharePort: 22002, CreatedAt: t0}})
	if err := k.Clear(ctx, api.DefaultNamespace); !errors.Is(err, raftfsm.ErrConflict) {
		t.Fatalf("a clear while v uses the folder: %v", err)
	}
	a.Must(t, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: api.DefaultNamespace, Name: "v"})
	if err := k.Clear(ctx, api.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(s.Path(api.DefaultNamespace), "f")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cleared folder holds f: %v", err)
	}
	if n, _ := a.FSM.Node("n1"); n.SharedUsage[api.DefaultNamespace] >= 4<<20 {
		t.Fatalf("after the clear the node record still says %v", n.SharedUsage)
	}

	a.Must(t, raftfsm.TypeNamespaceSharedStorage, raftfsm.NamespaceSharedStorage{Namespace: api.DefaultNamespace})
	if err := k.pass(ctx); err != nil {
		t.Fatal(err)
	}
	if nss, _ := s.Namespaces(); len(nss) != 0 {
		t.Fatalf("folders of a namespace whose shared storage is off: %v", nss)
	}
	if last := a.reports[len(a.reports)-1]; len(last.Usage) != 0 {
		t.Fatalf("the last report still names %v", last.Usage)
	}
}
