package leader

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// The leader deletes the VMs whose deploy gave up on them before they
// ran, and only those: not one that ran, not one whose deploy still waits.
func TestExpire_stale_deploys(t *testing.T) {
	l, r := cluster(t, 2)
	ctx := context.Background()
	past, future := time.Now().UTC().Add(-time.Minute), time.Now().UTC().Add(time.Hour)
	place := func(name string, by time.Time) raftfsm.VM {
		t.Helper()
		pl := placement(name, 1, 1<<30)
		pl.VM.DeployBy = &by
		vm, err := l.Place(ctx, pl)
		if err != nil {
			t.Fatal(err)
		}
		return vm
	}
	stale := place("stale", past)
	ran := place("ran", past)
	if _, err := r.ApplyCommand(ctx, raftfsm.TypeVMStatus, raftfsm.VMStatus{Namespace: ran.Namespace, Name: ran.Name, Node: ran.Node, Status: raftfsm.VMRunning}); err != nil {
		t.Fatal(err)
	}
	if vm, _ := r.FSM.VM(ran.Namespace, ran.Name); vm.DeployBy != nil {
		t.Fatalf("a VM that ran keeps its deploy's deadline %v", vm.DeployBy)
	}
	place("waited-for", future)

	tctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.expireVMs(tctx) }()
	defer func() { cancel(); <-done }()
	poll.For(t, "the stale deploy's VM deleted", 10*time.Second, func() error {
		if _, ok := r.FSM.VM(stale.Namespace, stale.Name); ok {
			return fmt.Errorf("vm %s is still there", stale.Name)
		}
		return nil
	})
	for _, name := range []string{"ran", "waited-for"} {
		if _, ok := r.FSM.VM(stale.Namespace, name); !ok {
			t.Fatalf("vm %s was deleted", name)
		}
	}
}
