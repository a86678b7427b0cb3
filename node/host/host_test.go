package host

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/fsmtest"
	"github.com/svc-project/svc/testkit/poll"
)

// replica is a single-replica stand-in for the peer: it applies proposals
// to the FSM at once, as the leader would, and is always caught up.
type replica struct{ *fsmtest.Applier }

func newReplica() *replica { return &replica{fsmtest.New()} }

func (r *replica) CaughtUp() bool { return true }
func (r *replica) CaughtUpCh() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// noFetch is a blob source for VMs whose blob is here already.
type noFetch struct{}

func (noFetch) EnsureBlob(context.Context, raftfsm.VM, string) error { return nil }
func (noFetch) HoldBlob(string) (func(), error)                      { return func() {}, nil }

// seeded returns a replica of a cluster with node n1 and image tiny held
// there, and an image store.
func seeded(t *testing.T) (*replica, *imagestore.Store) {
	t.Helper()
	r := newReplica()
	r.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c1", time.Now().UTC()))
	r.Must(t, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: "n1", Phase: api.PhaseReady, Time: time.Now().UTC(),
		NodeFacts: raftfsm.NodeFacts{Addr: "10.0.0.1", Arch: "amd64", Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 64 << 30}}})
	r.Must(t, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: "tiny", Namespace: api.DefaultNamespace,
		Digest: "sha256:aa", SizeBytes: 10, Format: "qcow2"}, Holder: "n1"})
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return r, images
}

func vmOn(name, node string, port int) raftfsm.VMCreate {
	return raftfsm.VMCreate{VM: raftfsm.VM{
		Name: name, Namespace: api.DefaultNamespace, Node: node, Image: "tiny", ImageDigest: "sha256:aa",
		VMOptions: raftfsm.VMOptions{CPU: 1, MemoryBytes: 1 << 30}, IP: "10.0.0.1", SSHPort: port, VNCPort: port + 1,
		ScreensharePort: port + 2, CreatedAt: time.Now().UTC(),
	}}
}

// The host runs its VMs, and a pass (a listing of the driver's domains)
// runs for a change of a VM on its node only: not for a job's progress, a
// VM of another node or a node's tag. Its timer is an hour here, so every
// pass counted is one a change woke.
func TestHost_passes_only_for_its_own_vms(t *testing.T) {
	r := newReplica()
	r.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c1", time.Now().UTC()))
	for _, n := range []string{"n1", "n2"} {
		r.Must(t, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: n, Phase: api.PhaseReady, Time: time.Now().UTC(),
			NodeFacts: raftfsm.NodeFacts{Addr: "10.0.0.1", Arch: "amd64", Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 64 << 30}}})
	}
	r.Must(t, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: "tiny", Namespace: api.DefaultNamespace,
		Digest: "sha256:aa", SizeBytes: 10, Format: "qcow2"}, Holder: "n1"})
	r.Must(t, raftfsm.TypeJobCreate, raftfsm.JobCreate{Job: raftfsm.Job{Name: "push-1", Namespace: api.DefaultNamespace,
		Type: raftfsm.JobPush, Node: "n1", Image: "tiny", Reference: "reg.example/x:y"}})
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	drv := fake.New(hypervisor.DomainPrefix("n1"))
	h := New(Config{Name: "n1", Bind: "10.0.0.1", FSM: r.FSM, Driver: drv, Images: images, Proposer: r,
		Blobs: noFetch{}, Ready: r, Healthy: func() bool { return true }, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	r.Must(t, raftfsm.TypeVMCreate, vmOn("web", "n1", 20000))
	running := func() error {
		if vm, _ := r.FSM.VM(api.DefaultNamespace, "web"); vm.Status != raftfsm.VMRunning {
			return fmt.Errorf("vm web is %q", vm.Status)
		}
		return nil
	}
	poll.For(t, "the VM running", 10*time.Second, running)
	settled := drv.Lists()
	poll.For(t, "the passes settled", 10*time.Second, func() error { // the VM's own status report wakes one more
		if n := drv.Lists(); n != settled {
			settled = n
			return fmt.Errorf("still passing")
		}
		return nil
	})

	cases := []struct {
		name string
		typ  raftfsm.Type
		body func(i int) any
	}{
		{"a job's progress", raftfsm.TypeJobUpdate, func(i int) any {
			return raftfsm.JobUpdate{Namespace: api.DefaultNamespace, Name: "push-1", State: raftfsm.JobRunning,
				BytesDone: int64(i), BytesTotal: 99, Time: time.Now().UTC()}
		}},
		{"a VM created on another node", raftfsm.TypeVMCreate, func(i int) any { return vmOn(fmt.Sprintf("other-%d", i), "n2", 21000+10*i) }},
		{"another node's VM reported", raftfsm.TypeVMStatus, func(i int) any {
			status := []string{raftfsm.VMRunning, raftfsm.VMStopped}[i%2]
			return raftfsm.VMStatus{Namespace: api.DefaultNamespace, Name: "other-0", Node: "n2", Status: status}
		}},
		{"a node's tag", raftfsm.TypeNodeTag, func(i int) any {
			return raftfsm.NodeTag{Namespace: api.DefaultNamespace, Name: "n1", Tag: fmt.Sprintf("t%d", i)}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := drv.Lists()
			for i := range 20 {
				r.Must(t, c.typ, c.body(i))
			}
			// A change of its own VM is the marker: once the host has run
			// the pass it woke, every earlier write has been seen.
			r.Must(t, raftfsm.TypeVMAction, raftfsm.VMAction{Namespace: api.DefaultNamespace, Name: "web", Action: raftfsm.ActionStop})
			poll.For(t, "the VM stopped", 10*time.Second, func() error {
				if vm, _ := r.FSM.VM(api.DefaultNamespace, "web"); vm.Status != raftfsm.VMStopped {
					return fmt.Errorf("vm web is %q", vm.Status)
				}
				return nil
			})
			r.Must(t, raftfsm.TypeVMAction, raftfsm.VMAction{Namespace: api.DefaultNamespace, Name: "web", Action: raftfsm.ActionStart})
			poll.For(t, "the VM running again", 10*time.Second, running)
			// stop, its report, start, its report: four passes, plus one the
			// previous report of its own VM may have woken and not yet run
			// when before was read (the settling above cannot rule it out
			// on a busy machine), and none for the twenty writes.
			if got := drv.Lists() - before; got > 5 {
				t.Fatalf("%d passes for 20 writes of %s and 2 changes of its own VM", got, c.name)
			}
		})
	}
}
