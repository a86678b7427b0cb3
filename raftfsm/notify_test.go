package raftfsm

import (
	"io"
	"slices"
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

// Watch wakes a node's waiter for a change of a VM on that node only (not
// for a job's progress, another node's VM or a node's tag), a VM's waiter
// for that VM only, and a resource's waiter for its commands only.
func TestFSM_Watch(t *testing.T) {
	f := NewFSM(nil)
	setup := append(vmSetup(t), upsertCmd(t, "n2"), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001), vmCreateCmd(t, "b", "n2", 1, 1<<30, 22011),
		mustEncode(t, TypeJobCreate, JobCreate{Job: Job{Name: "push-1", Namespace: api.DefaultNamespace, Type: JobPush, Node: "n1", Image: "mini", Reference: "r.example/x:y"}}))
	if r := applyAll(t, f, setup...); r.Err != nil {
		t.Fatal(r.Err)
	}
	index := uint64(len(setup))
	cases := []struct {
		name              string
		cmd               []byte
		n1, n2, vmA, jobs bool // woken
	}{
		{"a job's progress", mustEncode(t, TypeJobUpdate, JobUpdate{Namespace: api.DefaultNamespace, Name: "push-1", State: JobRunning, BytesDone: 10, BytesTotal: 100, Time: t0}), false, false, false, true},
		{"a node's tag", mustEncode(t, TypeNodeTag, NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: "ssd"}), false, false, false, false},
		{"n2's VM reported", mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "b", Node: "n2", Status: VMRunning}), false, true, false, false},
		{"n1's VM stopped", vmActionCmd(t, "a", ActionStop), true, false, true, false},
		{"a VM created on n1", vmCreateCmd(t, "c", "n1", 1, 1<<30, 22021), true, false, false, false},
		{"n2's VM deleted", mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "b"}), false, true, false, false},
		{"a refused create", vmCreateCmd(t, "c", "n1", 1, 1<<30, 22031), false, false, false, false},
		{"n1's VM deleted", mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a"}), true, false, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n1, n2 := f.Watch(NodeTopic("n1")), f.Watch(NodeTopic("n2"))
			vmA, jobs := f.Watch(VMTopic(api.DefaultNamespace, "a")), f.Watch(ResourceTopic(ResourceJob))
			index++
			f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: c.cmd})
			got := []bool{closed(n1), closed(n2), closed(vmA), closed(jobs)}
			if want := []bool{c.n1, c.n2, c.vmA, c.jobs}; !slices.Equal(got, want) {
				t.Fatalf("woken (n1, n2, vm a, jobs): %v; want %v", got, want)
			}
		})
	}
	// A restore replaces everything: every waiter is woken.
	g := NewFSM(nil)
	waiter := g.Watch(NodeTopic("n1"))
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
