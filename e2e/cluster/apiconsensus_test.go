package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// The API proposes a user's write only on the leader: a peer that is not
// (or no longer) the leader refuses it as such, a 503 the client retries,
// rather than sending it on in its own name, which the leader refuses for
// good (403: a user's VM delete is no peer's to propose). The peer's own
// proposals still go through the leader from any peer.
func TestAPIConsensus_user_writes_only_on_the_leader(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	f := c.Followers()[0]
	cl := c.Client(leader)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "keep", CPU: kit.Intp(1)})
	if err != nil {
		t.Fatal(err)
	}
	// The follower's replica has the VM before anything is asked of it: the
	// deploy's answer came from the leader.
	c.WaitFor("the VM on the follower", 10*time.Second, func() error {
		if _, ok := f.Peer.FSM().VM(kit.NS, vm.Name); !ok {
			return errors.New("not yet")
		}
		return nil
	})
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := raftfsm.VMDelete{Namespace: kit.NS, Name: vm.Name}
	cases := []struct {
		name      string
		propose   func() error
		retryable bool // refused as not the leader: the client asks again
	}{
		{"user delete on a follower", func() error {
			_, err := peer.APIConsensus(f.Peer).Apply(cctx, raftfsm.TypeVMDelete, del)
			return err
		}, true},
		{"the same through the peer's own path: refused for good", func() error {
			return peer.APIConsensus(f.Peer).Propose(cctx, raftfsm.TypeVMDelete, del)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.propose()
			if err == nil || errors.Is(err, raftfsm.ErrNotLeader) != tc.retryable {
				t.Fatalf("%v; want refused, retryable %v", err, tc.retryable)
			}
			if _, ok := f.Peer.FSM().VM(kit.NS, vm.Name); !ok {
				t.Fatal("the VM was deleted")
			}
		})
	}
	// On the leader the API's write is carried out.
	if _, err := peer.APIConsensus(leader.Peer).Apply(cctx, raftfsm.TypeVMDelete, del); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the VM deleted", 10*time.Second, func() error {
		if _, ok := f.Peer.FSM().VM(kit.NS, vm.Name); ok {
			return errors.New("still there")
		}
		return nil
	})
}
