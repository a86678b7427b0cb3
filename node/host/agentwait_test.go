package host

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// askedAgent is a fake guest agent that notes the VM's recorded status at
// each query of its guest.
type askedAgent struct {
	*fake.Agent
	status func() string
	mu     sync.Mutex
	seen   []string
}

func (a *askedAgent) GuestInfo(ctx context.Context, name string) (hypervisor.GuestInfo, error) {
	a.mu.Lock()
	a.seen = append(a.seen, a.status())
	a.mu.Unlock()
	return a.Agent.GuestInfo(ctx, name)
}

func (a *askedAgent) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

// A guest the host has just powered on is reported Running before its
// agent is asked (it cannot have one yet; libvirt holds the query up to
// seconds while guests start), and the agent's report still follows.
func TestHost_running_reported_before_the_agent_is_asked(t *testing.T) {
	r, images := seeded(t)
	drv := &askedAgent{Agent: fake.NewAgent(fake.New(hypervisor.DomainPrefix("n1"))), status: func() string {
		vm, _ := r.FSM.VM(api.DefaultNamespace, "web")
		return vm.Status
	}}
	h := New(Config{Name: "n1", Bind: "10.0.0.1", FSM: r.FSM, Driver: drv, Images: images, Proposer: r,
		Blobs: noFetch{}, Ready: r, Healthy: func() bool { return true }, Interval: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	r.Must(t, raftfsm.TypeVMCreate, vmOn("web", "n1", 20000))
	poll.For(t, "the guest's agent reported", 10*time.Second, func() error {
		if vm, _ := r.FSM.VM(api.DefaultNamespace, "web"); vm.Guest == nil || !vm.Guest.Agent {
			return errors.New("no agent report yet")
		}
		return nil
	})
	seen := drv.asked()
	if len(seen) == 0 {
		t.Fatal("an agent report without a query of the agent")
	}
	if seen[0] != raftfsm.VMRunning {
		t.Fatalf("the agent was first asked while the VM was %q (every query: %q); want Running", seen[0], seen)
	}
}
