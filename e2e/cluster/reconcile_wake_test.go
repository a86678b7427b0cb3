package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
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
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "on-a", Node: a.Name, CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
	reg, _ := stalledRegistry(t)
	job, err := cl.PushImage(kit.Ctx(t), kit.NS, "tiny", reg+"/team/tiny:v1")
	if err != nil {
		t.Fatal(err)
	}
	j, _ := cl.GetJob(kit.Ctx(t), kit.NS, job.JobName)
	holder := a
	if j.Node == b.Name {
		holder = b
	}
	listsA, listsB := a.Fake.Lists(), b.Fake.Lists()

	// 20 progress reports of the job, as its peer sends them every 2 s.
	for i := range 20 {
		if _, err := holder.Peer.Apply(kit.Ctx(t), raftfsm.TypeJobUpdate, raftfsm.JobUpdate{
			Namespace: kit.NS, Name: job.JobName, State: raftfsm.JobRunning, BytesDone: int64(i), BytesTotal: 100, Time: time.Now().UTC(),
		}); err != nil {
			t.Fatal(err)
		}
	}
	// 10 changes of the VM on a.
	for range 5 {
		for _, action := range []string{"stop", "start"} {
			if _, err := cl.ExecVM(kit.Ctx(t), kit.NS, "on-a", action); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A VM on b: b's pass runs for it; its count so far says how many ran.
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "on-b", Node: b.Name, CPU: kit.Intp(1)}); err != nil {
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
		vm, err := cl.GetVM(kit.Ctx(t), kit.NS, "on-a")
		if err != nil || vm.Status != api.StatusRunning {
			return fmt.Errorf("%+v %v", vm, err)
		}
		return nil
	})
}
