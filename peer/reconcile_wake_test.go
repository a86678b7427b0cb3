package peer_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// A host's reconcile pass (a libvirt listing each) runs when a VM on it
// changes, and on its timer: not for a job's progress reports, nor for the
// VMs of another node. Here the timer is an hour, so every pass counted is
// one a change woke.
func TestReconcile_woken_by_its_own_vms_only(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{VMInterval: time.Hour})
	leader := c.WaitLeader()
	a, b := c.Members[0], c.Members[1]
	cl := c.Client(leader)
	upload(t, cl, "tiny", tinyImage(t))
	if _, err := cl.DeployVM(ctx(t), ns, api.DeployRequest{Image: "tiny", Name: "on-a", Node: a.Name, CPU: intp(1)}); err != nil {
		t.Fatal(err)
	}
	reg, _ := stalledRegistry(t)
	job, err := cl.PushImage(ctx(t), ns, "tiny", reg+"/team/tiny:v1")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := cl.GetJob(ctx(t), ns, job.JobName)
	holder := a
	if j.Node == b.Name {
		holder = b
	}
	listsA, listsB := a.Fake.Lists(), b.Fake.Lists()

	// 20 progress reports of the job, as its peer sends them every 2 s.
	for i := range 20 {
		if _, err := holder.Peer.Apply(ctx(t), raftfsm.TypeJobUpdate, raftfsm.JobUpdate{
			Namespace: ns, Name: job.JobName, State: raftfsm.JobRunning, BytesDone: int64(i), BytesTotal: 100, Time: time.Now().UTC(),
		}); err != nil {
			t.Fatal(err)
		}
	}
	// 10 changes of the VM on a.
	for range 5 {
		for _, action := range []string{"stop", "start"} {
			if _, err := cl.ExecVM(ctx(t), ns, "on-a", action); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A VM on b: b's pass runs for it; its count so far says how many ran.
	if _, err := cl.DeployVM(ctx(t), ns, api.DeployRequest{Image: "tiny", Name: "on-b", Node: b.Name, CPU: intp(1)}); err != nil {
		t.Fatal(err)
	}
	if got := b.Fake.Lists() - listsB; got < 1 || got > 4 {
		t.Errorf("b listed its domains %d times: woken by a's VMs or the job (want 1-4, for its own VM)", got)
	}
	if got := a.Fake.Lists() - listsA; got > 40 {
		t.Errorf("a listed its domains %d times for 10 changes of its VM", got)
	}
	// And a's VM's changes woke a: its passes ran for them.
	c.WaitFor("on-a running", 10*time.Second, func() error {
		vm, err := cl.GetVM(ctx(t), ns, "on-a")
		if err != nil || vm.Status != api.StatusRunning {
			return fmt.Errorf("%+v %v", vm, err)
		}
		return nil
	})
}
