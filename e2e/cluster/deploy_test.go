package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// deployResult is a deploy's answer, sent from the goroutine that waited.
type deployResult struct {
	vm  api.VM
	err error
}

// A deploy sent to a follower waits there, on its replica, once the leader
// has placed it: the leader is killed while the VM is still being created,
// and the caller still gets its running VM from the follower (forwarded
// whole, the deploy died with the leader's connection: a 503).
func TestDeploy_outlives_its_leader_on_the_follower_that_waits(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	fs := c.Followers()
	waiter, host := fs[0], fs[1]
	cl := c.Client(waiter)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	release := make(chan struct{})
	host.Fake.HoldCreatesUntil(release)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	done := make(chan deployResult, 1)
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		vm, err := cl.DeployVM(dctx, kit.NS, api.DeployRequest{Image: "tiny", Name: "survivor", Node: host.Name, CPU: kit.Intp(1)})
		done <- deployResult{vm, err}
	}()
	c.WaitFor("the host creating the VM", 20*time.Second, func() error {
		if !slices.Contains(host.Fake.Calls(), "hold create") {
			return errors.New("no create yet")
		}
		return nil
	})
	c.Crash(leader)
	next := c.WaitLeader()
	t.Logf("leader %s killed; %s leads", leader.Name, next.Name)
	close(release)
	var got deployResult
	select {
	case got = <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("no answer to the deploy 90 s after the VM's create was let go")
	}
	if got.err != nil {
		t.Fatalf("deploy through %s across the leader's crash: %v", waiter.Name, got.err)
	}
	if got.vm.Name != "survivor" || got.vm.Status != api.StatusRunning || got.vm.Node != host.Name {
		t.Fatalf("deployed %+v", got.vm)
	}
	if _, ok := host.Fake.Spec(hypervisor.DomainName(host.Name, kit.NS, "survivor")); !ok {
		t.Fatal("no domain on the host")
	}
}

// A deploy that fails on its node is answered by the follower that waited,
// and that follower removes the VM: a peer may delete a deploy's VM only
// while it has not run, and this one never did.
func TestDeploy_failed_on_its_node_is_removed_by_the_follower_that_waits(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	fs := c.Followers()
	waiter, host := fs[0], fs[1]
	cl := c.Client(waiter)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	host.Fake.SetCreateError(errors.New("disk is gone"))
	_, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "doomed", Node: host.Name, CPU: kit.Intp(1), Timeout: kit.Floatp(60)})
	var st *api.StatusError
	if !errors.As(err, &st) || st.Status.Code != 500 || !strings.Contains(st.Status.Message, "disk is gone") {
		t.Fatalf("deploy of a VM its node cannot create: %v", err)
	}
	if _, err := cl.GetVM(kit.Ctx(t), kit.NS, "doomed"); api.CodeOf(err) != 404 {
		t.Fatalf("the failed deploy's VM through %s, which answered the deploy: %v, want 404", waiter.Name, err)
	}
	for _, m := range c.Running() { // the others' replicas follow
		c.WaitFor("the VM gone on "+m.Name, 10*time.Second, func() error {
			if _, err := c.Client(m).GetVM(kit.Ctx(t), kit.NS, "doomed"); api.CodeOf(err) != 404 {
				return fmt.Errorf("%v, want 404", err)
			}
			return nil
		})
	}
}

// A peer may delete a VM through the leader only for a deploy that has not
// seen it run: once it runs, its removal is refused.
func TestDeploy_a_running_vm_is_no_peers_to_delete(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	f := c.Followers()[0]
	cl := c.Client(f)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "kept", CPU: kit.Intp(1)})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := f.Peer.FSM().VM(kit.NS, "kept")
	if !ok || got.DeployBy != nil {
		t.Fatalf("the running VM on %s's replica: %+v (deployBy should be cleared)", f.Name, got)
	}
	_, err = f.Peer.Apply(kit.Ctx(t), raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: kit.NS, Name: "kept", UID: got.UID, Unrun: true})
	if err == nil || !strings.Contains(err.Error(), "ran") {
		t.Fatalf("a peer's removal of a VM that ran: %v", err)
	}
	_, err = f.Peer.Apply(kit.Ctx(t), raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: kit.NS, Name: "kept", UID: got.UID})
	if err == nil || !strings.Contains(err.Error(), "may propose") {
		t.Fatalf("a peer's plain VM delete: %v", err)
	}
	if _, err := cl.GetVM(kit.Ctx(t), kit.NS, vm.Name); err != nil {
		t.Fatal(fmt.Errorf("the VM after the refused removals: %w", err))
	}
}
