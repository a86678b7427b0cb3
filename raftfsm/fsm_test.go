package raftfsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/api"
)

var t0 = time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC)

func mustEncode(t testing.TB, typ Type, body any) []byte {
	t.Helper()
	b, err := Encode(typ, body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// applyAll applies commands in order through the raft.FSM interface and
// returns the last result.
func applyAll(t testing.TB, f *FSM, cmds ...[]byte) Result {
	t.Helper()
	var last Result
	for _, c := range cmds {
		r := f.Apply(&raft.Log{Index: f.Index() + 1, Type: raft.LogCommand, Data: c})
		if r != nil {
			last = r.(Result)
		} else {
			last = Result{}
		}
	}
	return last
}

// roundTrip snapshots f and restores the snapshot into a fresh FSM.
func roundTrip(t testing.TB, f *FSM) *FSM {
	t.Helper()
	checkIndex(t, f)
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := NewFSM(nil)
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	return g
}

// checkIndex fails when the index Apply maintained differs from one derived
// afresh from the state.
func checkIndex(t testing.TB, f *FSM) {
	t.Helper()
	f.mu.RLock()
	defer f.mu.RUnlock()
	got, want := f.state.ix(), buildIndex(f.state)
	shape := func(x *index) string {
		nodes := map[string][]string{}
		for n, vms := range x.nodeVMs {
			for k := range vms {
				nodes[n] = append(nodes[n], k)
			}
			slices.Sort(nodes[n])
		}
		for n, vms := range nodes {
			if len(vms) == 0 {
				delete(nodes, n)
			}
		}
		trim := func(m map[string]int) map[string]int {
			out := map[string]int{}
			for k, v := range m {
				if v != 0 {
					out[k] = v
				}
			}
			return out
		}
		used := map[string]Usage{}
		for n, u := range x.used {
			if u != (Usage{}) {
				used[n] = u
			}
		}
		ports := map[string][]int{}
		for n, ps := range x.ports {
			for p := range ps {
				ports[n] = append(ports[n], p)
			}
			slices.Sort(ports[n])
		}
		for n, ps := range ports {
			if len(ps) == 0 {
				delete(ports, n)
			}
		}
		return fmt.Sprint(nodes, used, ports, trim(x.nsVMs), trim(x.digests), trim(x.readable))
	}
	if g, w := shape(got), shape(want); g != w {
		t.Fatalf("the maintained index differs from the state's:\n%s\n%s", g, w)
	}
}

type memSink struct{ bytes.Buffer }

func (*memSink) ID() string    { return "mem" }
func (*memSink) Cancel() error { return nil }
func (*memSink) Close() error  { return nil }

func initCmd(t testing.TB) []byte {
	return mustEncode(t, TypeInit, TestInit("c1", t0))
}

func upsertCmd(t testing.TB, name string) []byte {
	return mustEncode(t, TypeNodeUpsert, NodeUpsert{
		Name: name, Phase: api.PhaseReady, Time: t0,
		NodeFacts: NodeFacts{Addr: "10.0.0.1", APIAddr: "10.0.0.1:8443", RaftAddr: "10.0.0.1:7000", GossipAddr: "10.0.0.1:7946",
			Arch: "amd64", Version: "dev", Capacity: Capacity{CPU: 8, MemoryBytes: 16 << 30, GPU: 1}},
	})
}

func TestFSM_commands(t *testing.T) {
	cases := []struct {
		name    string
		setup   [][]byte
		cmd     []byte
		wantErr error
		check   func(t *testing.T, f *FSM)
	}{
		{
			name: "init creates the default namespace",
			cmd:  initCmd(t),
			check: func(t *testing.T, f *FSM) {
				if ok, id := f.Initialized(); !ok || id != "c1" {
					t.Fatalf("initialized = %v %q", ok, id)
				}
				if _, ok := f.Namespace(api.DefaultNamespace); !ok {
					t.Fatal("no default namespace")
				}
			},
		},
		{name: "init twice", setup: [][]byte{initCmd(t)}, cmd: initCmd(t), wantErr: ErrAlreadyExists},
		{name: "init without id", cmd: mustEncode(t, TypeInit, Init{}), wantErr: ErrInvalid},
		{
			name:  "upsert creates a node in the default namespace",
			setup: [][]byte{initCmd(t)},
			cmd:   upsertCmd(t, "n1"),
			check: func(t *testing.T, f *FSM) {
				n, ok := f.Node("n1")
				if !ok || n.Namespace != api.DefaultNamespace || n.Phase != api.PhaseReady || n.Capacity.CPU != 8 || len(n.Tags) != 0 || n.Tags == nil {
					t.Fatalf("node = %+v", n)
				}
			},
		},
		{
			name:  "upsert keeps tags and namespace",
			setup: [][]byte{initCmd(t), upsertCmd(t, "n1"), mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "ssd"})},
			cmd:   mustEncode(t, TypeNodeUpsert, NodeUpsert{Name: "n1", NodeFacts: NodeFacts{Addr: "10.0.0.9", Capacity: Capacity{CPU: 2}}}),
			check: func(t *testing.T, f *FSM) {
				n, _ := f.Node("n1")
				if n.Addr != "10.0.0.9" || n.Capacity.CPU != 2 || !n.HasTag("ssd") || n.Phase != api.PhaseReady {
					t.Fatalf("node = %+v", n)
				}
			},
		},
		{name: "upsert without name", cmd: mustEncode(t, TypeNodeUpsert, NodeUpsert{}), wantErr: ErrInvalid},
		{name: "upsert negative capacity", cmd: mustEncode(t, TypeNodeUpsert, NodeUpsert{Name: "x", NodeFacts: NodeFacts{Capacity: Capacity{CPU: -1}}}), wantErr: ErrInvalid},
		{name: "upsert bad phase", cmd: mustEncode(t, TypeNodeUpsert, NodeUpsert{Name: "x", Phase: "SLEEPY"}), wantErr: ErrInvalid},
		{
			name:  "set phase records the transition time",
			setup: [][]byte{initCmd(t), upsertCmd(t, "n1")},
			cmd:   mustEncode(t, TypeNodeSetPhase, NodeSetPhase{Name: "n1", Phase: api.PhaseNotReady, Reason: "gossip: dead", Time: t0.Add(time.Minute)}),
			check: func(t *testing.T, f *FSM) {
				n, _ := f.Node("n1")
				if n.Phase != api.PhaseNotReady || n.PhaseReason != "gossip: dead" || !n.PhaseSince.Equal(t0.Add(time.Minute)) {
					t.Fatalf("node = %+v", n)
				}
			},
		},
		{name: "set phase unknown node", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNodeSetPhase, NodeSetPhase{Name: "nope", Phase: api.PhaseReady}), wantErr: ErrNotFound},
		{name: "set phase bad value", setup: [][]byte{initCmd(t), upsertCmd(t, "n1")}, cmd: mustEncode(t, TypeNodeSetPhase, NodeSetPhase{Name: "n1", Phase: "x"}), wantErr: ErrInvalid},
		{
			name:  "tag sorts and deduplicates",
			setup: [][]byte{initCmd(t), upsertCmd(t, "n1"), mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "zz"})},
			cmd:   mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "aa"}),
			check: func(t *testing.T, f *FSM) {
				applyAll(t, f, mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "aa"}))
				n, _ := f.Node("n1")
				if len(n.Tags) != 2 || n.Tags[0] != "aa" || n.Tags[1] != "zz" {
					t.Fatalf("tags = %v", n.Tags)
				}
			},
		},
		{name: "tag invalid", setup: [][]byte{initCmd(t), upsertCmd(t, "n1")}, cmd: mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "a b"}), wantErr: ErrInvalid},
		{name: "tag unknown node", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "a"}), wantErr: ErrNotFound},
		{name: "tag node of other namespace", setup: [][]byte{initCmd(t), upsertCmd(t, "n1")}, cmd: mustEncode(t, TypeNodeTag, NodeTag{Namespace: "team-a", Name: "n1", Tag: "a"}), wantErr: ErrNotFound},
		{
			name:  "untag removes",
			setup: [][]byte{initCmd(t), upsertCmd(t, "n1"), mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "gpu"})},
			cmd:   mustEncode(t, TypeNodeUntag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "gpu"}),
			check: func(t *testing.T, f *FSM) {
				if n, _ := f.Node("n1"); len(n.Tags) != 0 || n.Tags == nil {
					t.Fatalf("tags = %#v", n.Tags)
				}
			},
		},
		{name: "untag absent tag is a no-op", setup: [][]byte{initCmd(t), upsertCmd(t, "n1")}, cmd: mustEncode(t, TypeNodeUntag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "x"})},
		{name: "untag unknown node", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNodeUntag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "x"}), wantErr: ErrNotFound},
		{
			name:  "namespace create",
			setup: [][]byte{initCmd(t)},
			cmd:   mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: "team-a", Time: t0}),
			check: func(t *testing.T, f *FSM) {
				if len(f.Namespaces()) != 2 {
					t.Fatalf("namespaces = %v", f.Namespaces())
				}
			},
		},
		{name: "namespace create twice", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: api.DefaultNamespace}), wantErr: ErrAlreadyExists},
		{name: "namespace create bad name", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: "Team_A"}), wantErr: ErrInvalid},
		{
			name:  "node set namespace",
			setup: [][]byte{initCmd(t), upsertCmd(t, "n1"), mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: "team-a"})},
			cmd:   mustEncode(t, TypeNodeSetNamespace, NodeSetNamespace{Name: "n1", Namespace: "team-a"}),
			check: func(t *testing.T, f *FSM) {
				if n, _ := f.Node("n1"); n.Namespace != "team-a" {
					t.Fatalf("namespace = %q", n.Namespace)
				}
			},
		},
		{name: "node set unknown namespace", setup: [][]byte{initCmd(t), upsertCmd(t, "n1")}, cmd: mustEncode(t, TypeNodeSetNamespace, NodeSetNamespace{Name: "n1", Namespace: "nope"}), wantErr: ErrNotFound},
		{name: "node set namespace unknown node", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNodeSetNamespace, NodeSetNamespace{Name: "n1", Namespace: api.DefaultNamespace}), wantErr: ErrNotFound},
		{
			name:  "namespace delete",
			setup: [][]byte{initCmd(t), mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: "team-a"})},
			cmd:   mustEncode(t, TypeNamespaceDelete, NamespaceDelete{Name: "team-a"}),
			check: func(t *testing.T, f *FSM) {
				if _, ok := f.Namespace("team-a"); ok {
					t.Fatal("namespace still there")
				}
			},
		},
		{name: "namespace delete default", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNamespaceDelete, NamespaceDelete{Name: api.DefaultNamespace}), wantErr: ErrConflict},
		{name: "namespace delete unknown", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeNamespaceDelete, NamespaceDelete{Name: "x"}), wantErr: ErrNotFound},
		{
			name: "namespace delete with nodes",
			setup: [][]byte{initCmd(t), upsertCmd(t, "n1"), mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: "team-a"}),
				mustEncode(t, TypeNodeSetNamespace, NodeSetNamespace{Name: "n1", Namespace: "team-a"})},
			cmd:     mustEncode(t, TypeNamespaceDelete, NamespaceDelete{Name: "team-a"}),
			wantErr: ErrConflict,
		},
		{
			name:  "vm create",
			setup: vmSetup(t),
			cmd:   vmCreateCmd(t, "web", "n1", 2, 4<<30, 22001),
			check: func(t *testing.T, f *FSM) {
				vm, ok := f.VM(api.DefaultNamespace, "web")
				if !ok || vm.Status != VMPending || vm.Desired != VMRunning || vm.IP != "10.0.0.1" {
					t.Fatalf("vm = %+v", vm)
				}
				n, _ := f.Node("n1")
				if n.Used.CPU != 2 || n.Used.MemoryBytes != 4<<30 {
					t.Fatalf("usage = %+v", n.Used)
				}
				if !f.PortsInUse("n1")[22001] || len(f.VMsOnNode("n1")) != 1 {
					t.Fatal("ports or node view wrong")
				}
			},
		},
		{name: "vm create twice", setup: append(vmSetup(t), vmCreateCmd(t, "web", "n1", 1, 1<<30, 22001)), cmd: vmCreateCmd(t, "web", "n1", 1, 1<<30, 23001), wantErr: ErrAlreadyExists},
		{name: "vm create over capacity", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 6, 1<<30, 22001)), cmd: vmCreateCmd(t, "b", "n1", 3, 1<<30, 23001), wantErr: ErrNoRoom},
		{name: "vm create port taken", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: vmCreateCmd(t, "b", "n1", 1, 1<<30, 22001), wantErr: ErrNoRoom},
		{name: "vm create unknown node", setup: vmSetup(t), cmd: vmCreateCmd(t, "a", "n9", 1, 1<<30, 22001), wantErr: ErrNotFound},
		{name: "vm create bad name", setup: vmSetup(t), cmd: vmCreateCmd(t, "Bad", "n1", 1, 1<<30, 22001), wantErr: ErrInvalid},
		{name: "vm create no cpu", setup: vmSetup(t), cmd: vmCreateCmd(t, "a", "n1", 0, 1<<30, 22001), wantErr: ErrInvalid},
		{
			name:  "vm stop then start",
			setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), vmActionCmd(t, "a", ActionStop)),
			cmd:   vmActionCmd(t, "a", ActionStart),
			check: func(t *testing.T, f *FSM) {
				if vm, _ := f.VM(api.DefaultNamespace, "a"); vm.Desired != VMRunning {
					t.Fatalf("desired %s", vm.Desired)
				}
			},
		},
		{name: "vm resume a running vm", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: vmActionCmd(t, "a", ActionResume), wantErr: ErrConflict},
		{name: "vm start a running vm", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: vmActionCmd(t, "a", ActionStart), wantErr: ErrConflict},
		{name: "vm suspend a stopped vm", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), vmActionCmd(t, "a", ActionStop)), cmd: vmActionCmd(t, "a", ActionSuspend), wantErr: ErrConflict},
		{name: "vm unknown action", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: vmActionCmd(t, "a", "explode"), wantErr: ErrInvalid},
		{
			name:  "vm revert bumps the generation",
			setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), vmActionCmd(t, "a", ActionSuspend)),
			cmd:   vmActionCmd(t, "a", ActionRevert),
			check: func(t *testing.T, f *FSM) {
				if vm, _ := f.VM(api.DefaultNamespace, "a"); vm.RevertGen != 1 || vm.Desired != VMRunning {
					t.Fatalf("vm %+v", vm)
				}
			},
		},
		{
			name:  "vm status from its node",
			setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)),
			cmd:   mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning, ObservedRevertGen: 0}),
			check: func(t *testing.T, f *FSM) {
				if vm, _ := f.VM(api.DefaultNamespace, "a"); vm.Status != VMRunning {
					t.Fatalf("status %s", vm.Status)
				}
			},
		},
		{name: "vm status from another node", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n2", Status: VMRunning}), wantErr: ErrConflict},
		{name: "vm status unknown", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), cmd: mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: "Dancing"}), wantErr: ErrInvalid},
		{
			name:  "vm delete frees the node",
			setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)),
			cmd:   mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a"}),
			check: func(t *testing.T, f *FSM) {
				if n, _ := f.Node("n1"); n.Used.CPU != 0 || len(f.PortsInUse("n1")) != 0 {
					t.Fatalf("still used %+v", n.Used)
				}
			},
		},
		{name: "vm delete unknown", setup: vmSetup(t), cmd: mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "x"}), wantErr: ErrNotFound},
		{
			name:  "vmconfig create",
			setup: vmSetup(t),
			cmd:   mustEncode(t, TypeVMConfigCreate, VMConfigCreate{Config: VMConfig{Name: "small", Namespace: api.DefaultNamespace, Image: "mini", VMOptions: VMOptions{CPU: 1}}}),
			check: func(t *testing.T, f *FSM) {
				if c, ok := f.VMConfig(api.DefaultNamespace, "small"); !ok || c.CPU != 1 || len(f.VMConfigs(api.DefaultNamespace)) != 1 {
					t.Fatalf("config %+v", c)
				}
			},
		},
		{name: "vmconfig unknown image", setup: vmSetup(t), cmd: mustEncode(t, TypeVMConfigCreate, VMConfigCreate{Config: VMConfig{Name: "small", Namespace: api.DefaultNamespace, Image: "nope"}}), wantErr: ErrNotFound},
		{name: "vmconfig delete unknown", setup: vmSetup(t), cmd: mustEncode(t, TypeVMConfigDelete, VMConfigDelete{Namespace: api.DefaultNamespace, Name: "small"}), wantErr: ErrNotFound},
		{name: "image twice", setup: vmSetup(t), cmd: imageCmd(t, "mini", "n2"), wantErr: ErrAlreadyExists},
		{
			name:  "blob gets a holder",
			setup: vmSetup(t),
			cmd:   mustEncode(t, TypeBlobAddHolder, BlobAddHolder{Digest: "sha256:aa", Node: "n2"}),
			check: func(t *testing.T, f *FSM) {
				if b, _ := f.Blob("sha256:aa"); len(b.Holders) != 2 || b.Holders[1] != "n2" {
					t.Fatalf("blob %+v", b)
				}
			},
		},
		{name: "blob unknown", setup: vmSetup(t), cmd: mustEncode(t, TypeBlobAddHolder, BlobAddHolder{Digest: "sha256:bb", Node: "n2"}), wantErr: ErrNotFound},
		{
			name:  "blob loses its last holder",
			setup: vmSetup(t),
			cmd:   mustEncode(t, TypeBlobDropHolder, BlobDropHolder{Digest: "sha256:aa", Node: "n1"}),
			check: func(t *testing.T, f *FSM) {
				if b, ok := f.Blob("sha256:aa"); ok {
					t.Fatalf("blob %+v is still known", b)
				}
				if !f.BlobInUse("sha256:aa") || f.BlobInUse("sha256:bb") {
					t.Fatal("the image's digest must stay in use, another must not")
				}
			},
		},
		{name: "blob drop unknown", setup: vmSetup(t), cmd: mustEncode(t, TypeBlobDropHolder, BlobDropHolder{Digest: "sha256:bb", Node: "n2"}), wantErr: ErrNotFound},
		{
			name:    "role binding full",
			setup:   append(vmSetup(t), bindUsers(t, 0, api.MaxBindingSubjects)...),
			cmd:     mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"one-more"}}),
			wantErr: ErrConflict,
		},
		{
			name:  "role binding: names already bound do not count twice",
			setup: append(vmSetup(t), bindUsers(t, 0, api.MaxBindingSubjects)...),
			cmd:   mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"u5", "u5"}}),
			check: func(t *testing.T, f *FSM) {
				if n := len(f.RoleBinding(api.DefaultNamespace).Users); n != api.MaxBindingSubjects {
					t.Fatalf("%d users bound", n)
				}
			},
		},
		{
			name:    "role binding change over the per-call maximum",
			setup:   vmSetup(t),
			cmd:     mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: names(0, api.MaxSubjectsPerCall+1)}),
			wantErr: ErrInvalid,
		},
		{name: "init without its fabric", cmd: mustEncode(t, TypeInit, Init{ClusterID: "c"}), wantErr: ErrInvalid},
		{name: "signing key set is refused", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeSigningKeySet, SigningKeySet{SigningKey: make([]byte, 32)}), wantErr: ErrInvalid},
		{
			name:  "user upsert keeps the creation time",
			setup: [][]byte{initCmd(t), mustEncode(t, TypeUserUpsert, UserUpsert{Name: "alice", Time: t0})},
			cmd:   mustEncode(t, TypeUserUpsert, UserUpsert{Name: "alice", Admin: true, Time: t0.Add(time.Hour)}),
			check: func(t *testing.T, f *FSM) {
				if u, ok := f.User("alice"); !ok || !u.Admin || !u.CreatedAt.Equal(t0) {
					t.Fatalf("user %+v", u)
				}
			},
		},
		{name: "user bad name", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeUserUpsert, UserUpsert{Name: "Alice"}), wantErr: ErrInvalid},
		{
			name:  "user remove unbinds",
			setup: [][]byte{initCmd(t), mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"bob"}})},
			cmd:   mustEncode(t, TypeUserRemove, UserRemove{Name: "bob"}),
			check: func(t *testing.T, f *FSM) {
				if _, ok := f.User("bob"); ok || len(f.RoleBinding(api.DefaultNamespace).Users) != 0 {
					t.Fatal("bob is still there")
				}
			},
		},
		{name: "user remove unknown", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeUserRemove, UserRemove{Name: "nobody"}), wantErr: ErrNotFound},
		{
			name:  "service account create",
			setup: [][]byte{initCmd(t)},
			cmd:   mustEncode(t, TypeSACreate, SACreate{Namespace: api.DefaultNamespace, Name: "ci", Time: t0}),
			check: func(t *testing.T, f *FSM) {
				if sa, ok := f.ServiceAccount(api.DefaultNamespace, "ci"); !ok || len(f.ServiceAccounts(api.DefaultNamespace)) != 1 {
					t.Fatalf("sa %+v", sa)
				}
			},
		},
		{name: "service account twice", setup: [][]byte{initCmd(t), mustEncode(t, TypeSACreate, SACreate{Namespace: api.DefaultNamespace, Name: "ci"})}, cmd: mustEncode(t, TypeSACreate, SACreate{Namespace: api.DefaultNamespace, Name: "ci"}), wantErr: ErrAlreadyExists},
		{name: "service account unknown namespace", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeSACreate, SACreate{Namespace: "nope", Name: "ci"}), wantErr: ErrNotFound},
		{
			name: "service account delete unbinds",
			setup: [][]byte{initCmd(t), mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: "team-a"}), mustEncode(t, TypeSACreate, SACreate{Namespace: api.DefaultNamespace, Name: "ci"}),
				mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: "team-a", ServiceAccounts: []string{"svc-default:ci"}})},
			cmd: mustEncode(t, TypeSADelete, SADelete{Namespace: api.DefaultNamespace, Name: "ci"}),
			check: func(t *testing.T, f *FSM) {
				if len(f.RoleBinding("team-a").ServiceAccounts) != 0 {
					t.Fatal("still bound")
				}
			},
		},
		{name: "service account delete unknown", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeSADelete, SADelete{Namespace: api.DefaultNamespace, Name: "ci"}), wantErr: ErrNotFound},
		{
			name:  "role binding add records new users",
			setup: [][]byte{initCmd(t), mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: "team-a"})},
			cmd:   mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: "team-a", Users: []string{"carol", "alice", "carol"}, Time: t0}),
			check: func(t *testing.T, f *FSM) {
				rb := f.RoleBinding("team-a")
				if len(rb.Users) != 2 || rb.Users[0] != "alice" {
					t.Fatalf("rb %+v", rb)
				}
				if _, ok := f.User("carol"); !ok {
					t.Fatal("carol not recorded")
				}
			},
		},
		{name: "role binding unknown service account", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, ServiceAccounts: []string{"x:y"}}), wantErr: ErrNotFound},
		{name: "role binding malformed service account", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, ServiceAccounts: []string{"xy"}}), wantErr: ErrInvalid},
		{name: "role binding no subject", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace}), wantErr: ErrInvalid},
		{
			name:  "role binding remove",
			setup: [][]byte{initCmd(t), mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"alice", "bob"}})},
			cmd:   mustEncode(t, TypeRoleBindingDel, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"alice"}}),
			check: func(t *testing.T, f *FSM) {
				if rb := f.RoleBinding(api.DefaultNamespace); len(rb.Users) != 1 || rb.Users[0] != "bob" {
					t.Fatalf("rb %+v", rb)
				}
			},
		},
		{
			name:  "cert set",
			setup: [][]byte{initCmd(t)},
			cmd:   mustEncode(t, TypeCertSet, CertSet{Cert: Cert{CertPEM: "C", KeyPEM: "K"}}),
			check: func(t *testing.T, f *FSM) {
				if c, ok := f.Cert(); !ok || c.CertPEM != "C" {
					t.Fatalf("cert %+v", c)
				}
			},
		},
		{name: "cert empty", setup: [][]byte{initCmd(t)}, cmd: mustEncode(t, TypeCertSet, CertSet{}), wantErr: ErrInvalid},
		{
			name:  "unknown ignorable command is skipped",
			setup: [][]byte{initCmd(t)},
			cmd:   append([]byte{byte(FlagIgnorable | 0x7e)}, []byte(`{}`)...),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCommandCase(t, c.setup, c.cmd, c.wantErr, c.check) })
	}
}

// runCommandCase applies setup, then cmd, and checks its error (a refused
// command leaves the state as it was), check on the state and on its
// snapshot round trip, and that the round trip changes nothing.
func runCommandCase(t *testing.T, setup [][]byte, cmd []byte, wantErr error, check func(*testing.T, *FSM)) {
	t.Helper()
	f := NewFSM(nil)
	applyAll(t, f, setup...)
	before, _ := f.Dump()
	r := f.Apply(&raft.Log{Index: uint64(len(setup) + 1), Type: raft.LogCommand, Data: cmd})
	var err error
	if r != nil {
		err = r.(Result).Err
	}
	if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
		t.Fatalf("err = %v, want %v", err, wantErr)
	}
	if wantErr != nil {
		if after, _ := f.Dump(); !bytes.Equal(before, after) {
			t.Fatalf("a refused command changed the state:\n%s\n%s", before, after)
		}
	}
	if f.Index() != uint64(len(setup)+1) {
		t.Fatalf("index = %d", f.Index())
	}
	for _, g := range []*FSM{f, roundTrip(t, f)} {
		if check != nil {
			check(t, g)
		}
	}
	g := roundTrip(t, f)
	a, _ := f.Dump()
	b, _ := g.Dump()
	if !bytes.Equal(a, b) || g.Index() != f.Index() {
		t.Fatalf("snapshot round trip differs:\n%s\n%s", a, b)
	}
}

func TestFSM_every_type_covered(t *testing.T) {
	// A new command type must get a case above and a seed in the fuzz corpus.
	known := 0
	for i := range commands {
		if Type(i).Known() {
			known++
		}
	}
	if known != 62 {
		t.Fatalf("%d command types; update TestFSM_commands and fuzz seeds", known)
	}
}

func TestCommandTable_entries_complete(t *testing.T) {
	names := map[string]Type{}
	for i, e := range commands {
		ty := Type(i)
		if e.apply == nil {
			if e.name != "" || e.resource != "" || e.peer != nil {
				t.Errorf("type %d has an entry without apply", i)
			}
			continue
		}
		if e.name == "" || e.resource == "" {
			t.Errorf("%d: name %q resource %q", i, e.name, e.resource)
		}
		if prev, dup := names[e.name]; dup {
			t.Errorf("%s: name of type %d and %d", e.name, prev, i)
		}
		names[e.name] = ty
		if ty.String() != e.name || ty.Resource() != e.resource || ty.PeerProposable() != (e.peer != nil) {
			t.Errorf("type %d: String/Resource/PeerProposable disagree with its entry", i)
		}
		if (ty | FlagIgnorable).String() != e.name {
			t.Errorf("type %d: the ignorable flag changes its name", i)
		}
	}
	if Type(0).Known() || Type(len(commands)).Known() {
		t.Error("a type outside the table is known")
	}
}

func TestFSM_changed_fires(t *testing.T) {
	f := NewFSM(nil)
	ch := f.Changed()
	applyAll(t, f, initCmd(t))
	select {
	case <-ch:
	default:
		t.Fatal("Changed did not fire")
	}
}

func TestFSM_restore_rejects_newer_snapshot(t *testing.T) {
	f := NewFSM(nil)
	err := f.Restore(io.NopCloser(bytes.NewReader([]byte(`{"version":99,"state":{}}`))))
	if err == nil {
		t.Fatal("restored a snapshot from the future")
	}
}

func TestFSM_restore_older_snapshot_without_maps(t *testing.T) {
	f := NewFSM(nil)
	if err := f.Restore(io.NopCloser(bytes.NewReader([]byte(`{"version":1,"index":7,"state":{"initialized":true,"clusterId":"old","namespaces":{"svc-default":{"name":"svc-default"}}}}`)))); err != nil {
		t.Fatal(err)
	}
	r := f.ApplyCommand(8, Command{Type: TypeNodeUpsert, Body: []byte(`{"name":"n1"}`)})
	if r.Err != nil {
		t.Fatalf("apply after restore: %v", r.Err)
	}
	if f.Index() != 8 || len(f.Nodes()) != 1 {
		t.Fatalf("index %d, nodes %v", f.Index(), f.Nodes())
	}
}

func vmSetup(t testing.TB) [][]byte {
	return [][]byte{initCmd(t), upsertCmd(t, "n1"), imageCmd(t, "mini", "n1")}
}

func imageCmd(t testing.TB, name, holder string) []byte {
	return mustEncode(t, TypeImageCreate, ImageCreate{Image: Image{Name: name, Namespace: api.DefaultNamespace, Digest: "sha256:aa", SizeBytes: 10, Format: "qcow2"}, Holder: holder})
}

func vmCreateCmd(t testing.TB, name, node string, cpu int, mem int64, sshPort int) []byte {
	return mustEncode(t, TypeVMCreate, VMCreate{VM: VM{
		Name: name, Namespace: api.DefaultNamespace, Node: node, Image: "mini", ImageDigest: "sha256:aa",
		VMOptions: VMOptions{CPU: cpu, MemoryBytes: mem}, IP: "10.0.0.1", SSHPort: sshPort, VNCPort: sshPort + 1, ScreensharePort: sshPort + 2, CreatedAt: t0,
	}})
}

func vmActionCmd(t testing.TB, name, action string) []byte {
	return mustEncode(t, TypeVMAction, VMAction{Namespace: api.DefaultNamespace, Name: name, Action: action})
}

// names returns "u<from>" ... "u<from+n-1>".
func names(from, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("u%d", from+i)
	}
	return out
}

// bindUsers returns the commands that bind n users to svc-default, in calls
// of MaxSubjectsPerCall.
func bindUsers(t testing.TB, from, n int) [][]byte {
	var out [][]byte
	for i := from; i < from+n; i += api.MaxSubjectsPerCall {
		out = append(out, mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: names(i, min(api.MaxSubjectsPerCall, from+n-i))}))
	}
	return out
}

func TestEncode_refuses_a_command_over_the_maximum(t *testing.T) {
	big := CertSet{Cert: Cert{CertPEM: strings.Repeat("c", MaxCommandBytes), KeyPEM: "k"}}
	if _, err := Encode(TypeCertSet, big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if _, err := Encode(TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: names(0, api.MaxSubjectsPerCall)}); err != nil {
		t.Fatalf("the largest add-subject call does not fit: %v", err)
	}
}

// BenchmarkApply_roleBinding applies the largest add-subject change to a
// binding of 1,000 and of 9,000 subjects: apply is linear, so the second
// costs a few times the first, not a hundred.
func BenchmarkApply_roleBinding(b *testing.B) {
	for _, bound := range []int{1000, 9000} {
		b.Run(fmt.Sprintf("bound_%d", bound), func(b *testing.B) {
			f := NewFSM(nil)
			applyAll(b, f, append(vmSetup(b), bindUsers(b, 0, bound)...)...)
			add, _ := Decode(mustEncode(b, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: names(bound, api.MaxSubjectsPerCall)}))
			del, _ := Decode(mustEncode(b, TypeRoleBindingDel, RoleBindingChange{Namespace: api.DefaultNamespace, Users: names(bound, api.MaxSubjectsPerCall)}))
			idx := f.Index()
			b.ResetTimer()
			for range b.N {
				idx++
				if r := f.ApplyCommand(idx, add); r.Err != nil {
					b.Fatal(r.Err)
				}
				idx++
				if r := f.ApplyCommand(idx, del); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// A delete naming an incarnation removes only that one: a failed deploy's
// clean-up never takes a VM created under the same name meanwhile.
func TestFSM_vm_delete_of_an_incarnation(t *testing.T) {
	f := NewFSM(nil)
	applyAll(t, f, append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001))...)
	first, _ := f.VM(api.DefaultNamespace, "a")
	if first.UID == 0 {
		t.Fatal("a VM without a UID")
	}
	if r := applyAll(t, f, mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a", UID: first.UID + 1})); !errors.Is(r.Err, ErrNotFound) {
		t.Fatalf("delete of another incarnation: %v", r.Err)
	}
	if _, ok := f.VM(api.DefaultNamespace, "a"); !ok {
		t.Fatal("the VM went")
	}
	if r := applyAll(t, f, mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a", UID: first.UID})); r.Err != nil {
		t.Fatalf("delete of its incarnation: %v", r.Err)
	}
	if _, ok := f.VM(api.DefaultNamespace, "a"); ok {
		t.Fatal("the VM stayed")
	}
}

// An unrun delete (a failed deploy's removal, which any peer may propose)
// takes a VM only while its deploy has not seen it run.
func TestFSM_vm_delete_unrun(t *testing.T) {
	by := t0.Add(time.Hour)
	deploying := mustEncode(t, TypeVMCreate, VMCreate{VM: VM{
		Name: "a", Namespace: api.DefaultNamespace, Node: "n1", Image: "mini", ImageDigest: "sha256:aa",
		VMOptions: VMOptions{CPU: 1, MemoryBytes: 1 << 30}, IP: "10.0.0.1", SSHPort: 22001, VNCPort: 22002, ScreensharePort: 22003,
		CreatedAt: t0, DeployBy: &by,
	}})
	running := mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning})
	tests := []struct {
		name    string
		setup   [][]byte
		wantErr error
		gone    bool
	}{
		{name: "has not run", setup: append(vmSetup(t), deploying), gone: true},
		{name: "ran", setup: append(vmSetup(t), deploying, running), wantErr: ErrConflict},
		{name: "placed without a deploy's deadline", setup: append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001)), wantErr: ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFSM(nil)
			applyAll(t, f, tt.setup...)
			vm, _ := f.VM(api.DefaultNamespace, "a")
			r := applyAll(t, f, mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a", UID: vm.UID, Unrun: true}))
			if !errors.Is(r.Err, tt.wantErr) || tt.wantErr == nil && r.Err != nil {
				t.Fatalf("unrun delete: %v, want %v", r.Err, tt.wantErr)
			}
			if _, ok := f.VM(api.DefaultNamespace, "a"); ok == tt.gone {
				t.Fatalf("VM there: %v, want gone: %v", ok, tt.gone)
			}
		})
	}
}

func TestNodeFacts_OwnPorts(t *testing.T) {
	f := NodeFacts{APIAddr: "10.0.0.1:8080", RaftAddr: "10.0.0.1:7000", GossipAddr: "[fd00::1]:7946", TLSPort: 8443}
	got := f.OwnPorts()
	for _, p := range []int{8080, 7000, 7946, 8443} {
		if !got[p] {
			t.Errorf("port %d missing from %v", p, got)
		}
	}
	if len(got) != 4 || len(NodeFacts{APIAddr: "no port"}.OwnPorts()) != 0 {
		t.Fatalf("OwnPorts = %v", got)
	}
}

// An entry at or below the index the state was applied to is not applied
// again, whatever it holds.
func TestFSM_entry_applied_already_is_skipped(t *testing.T) {
	f := NewFSM(nil)
	for _, c := range []struct {
		index   uint64
		name    string
		applied bool
	}{
		{5, "first", true},
		{5, "again", false},
		{4, "older", false},
		{6, "next", true},
	} {
		f.Apply(&raft.Log{Index: c.index, Type: raft.LogCommand, Data: mustEncode(t, TypeNamespaceCreate, NamespaceCreate{Name: c.name, Time: time.Now()})})
		if _, ok := f.Namespace(c.name); ok != c.applied {
			t.Errorf("entry %d (%s): applied %v, want %v", c.index, c.name, ok, c.applied)
		}
	}
	if f.Index() != 6 {
		t.Fatalf("index %d, want 6", f.Index())
	}
}
