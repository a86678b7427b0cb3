package raftfsm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/api"
)

// WaitVM returns as the VM gets where done wants it, with done's own
// error, ErrNotFound for a VM deleted or replaced, and ErrTimeout saying
// what the VM last was.
func TestWaitVM_cases(t *testing.T) {
	stopped := errors.New("stopped short")
	cases := []struct {
		name     string
		uid      func(VM) uint64
		then     func(t *testing.T) []byte // applied while WaitVM waits
		done     func(VM) (bool, error)
		wantKind error
		wantMsg  string
	}{
		{name: "gets there", then: func(t *testing.T) []byte { return running(t) },
			done: func(vm VM) (bool, error) { return vm.Status == VMRunning, nil }},
		{name: "done's error", then: func(t *testing.T) []byte { return running(t) },
			done: func(vm VM) (bool, error) {
				if vm.Status == VMRunning {
					return false, stopped
				}
				return false, nil
			}, wantKind: stopped, wantMsg: "stopped short"},
		{name: "deleted", then: func(t *testing.T) []byte {
			return mustEncode(t, TypeVMDelete, VMDelete{Namespace: api.DefaultNamespace, Name: "a"})
		}, done: func(VM) (bool, error) { return false, nil }, wantKind: ErrNotFound, wantMsg: `vm "a" was deleted`},
		{name: "another of its name", uid: func(vm VM) uint64 { return vm.UID + 1 },
			done: func(VM) (bool, error) { return true, nil }, wantKind: ErrNotFound, wantMsg: `vm "a" was deleted`},
		{name: "not in time", done: func(VM) (bool, error) { return false, nil }, wantKind: ErrTimeout,
			wantMsg: `vm "a" is Pending, not there yet after waiting: context deadline exceeded`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := NewFSM(nil)
			setup := append(vmSetup(t), vmCreateCmd(t, "a", "n1", 1, 1<<30, 22001))
			if r := applyAll(t, f, setup...); r.Err != nil {
				t.Fatal(r.Err)
			}
			vm, _ := f.VM(api.DefaultNamespace, "a")
			var uid uint64
			if c.uid != nil {
				uid = c.uid(vm)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if c.then != nil {
				cmd := c.then(t)
				// Applied once WaitVM watches: its first look finds the VM
				// as created.
				go func() { f.Apply(&raft.Log{Index: uint64(len(setup) + 1), Type: raft.LogCommand, Data: cmd}) }()
			}
			_, err := WaitVM(ctx, f, api.DefaultNamespace, "a", uid, c.done)
			switch {
			case c.wantKind == nil && err != nil:
				t.Fatalf("WaitVM: %v", err)
			case c.wantKind != nil && (!errors.Is(err, c.wantKind) || !strings.Contains(err.Error(), c.wantMsg)):
				t.Fatalf("WaitVM: %v, want %v saying %q", err, c.wantKind, c.wantMsg)
			}
		})
	}
}

// running is node n1's report that VM a runs.
func running(t *testing.T) []byte {
	return mustEncode(t, TypeVMStatus, VMStatus{Namespace: api.DefaultNamespace, Name: "a", Node: "n1", Status: VMRunning})
}
