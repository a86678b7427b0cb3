package raftfsm

import (
	"io"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/api"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// NodeChanged wakes a node's waiter for a change of a VM on that node
// only: not for a job's progress, another node's VM or a node's tag.
func TestFSM_NodeChanged(t *testing.T) {
	f := NewFSM(nil)
	setup := append(vmSetup(t), upsertCmd(t, "n2"), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), vmCreateCmd(t, "b", "n2", 1, 1<<30, 22011),
		mustEncode(t, TypeJobCreate, JobCreate{Job: Job{Name: "push-1", Namespace: api.DefaultNamespace, Type: JobPush, Node: "n1", Image: "mini", Reference: "r.example/x:y"}}))
	if r := applyAll(t, f, setup...); r.Err != nil {
		t.Fatal(r.Err)
	}
	index := uint64(len(setup))
	cases := []struct {
		name   string
		cmd    []byte
		n1, n2 bool // woken
	}{
		{"a job's progress", mustEncode(t, TypeJobUpdate, JobUpdate{Namespace: api.DefaultNamespace, Name: "push-1", State: JobRunning, BytesDone: 10, BytesTotal: 100, Time: t0}), false, false},
		{"a node's tag", mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "ssd"}), false, false},
		{"n2's VM reported", mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "b", Node: "n2", Status: VMRunning}), false, true},
		{"n1's VM stopped", vmActionCmd(t, "a", ActionStop), true, false},
		{"a VM created on n1", vmCreateCmd(t, "c", "n1", 1, 1<<30, 22021), true, false},
		{"n2's VM deleted", mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "b"}), false, true},
		{"a refused create", vmCreateCmd(t, "c", "n1", 1, 1<<30, 22031), false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n1, n2 := f.NodeChanged("n1"), f.NodeChanged("n2")
			index++
			f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: c.cmd})
			if closed(n1) != c.n1 || closed(n2) != c.n2 {
				t.Fatalf("woken: n1 %v, n2 %v; want %v, %v", closed(n1), closed(n2), c.n1, c.n2)
			}
		})
	}
	// A restore replaces everything: every waiter is woken.
	g := NewFSM(nil)
	waiter := g.NodeChanged("n1")
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	if err := g.Restore(io.NopCloser(&sink.Buffer)); err != nil {
		t.Fatal(err)
	}
	if !closed(waiter) {
		t.Fatal("a restore did not wake the node's waiter")
	}
}
