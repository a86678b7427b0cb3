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

func TestAgentEvery_backs_off_for_a_silent_agent(t *testing.T) {
	now := time.Now()
	answered := raftfsm.VM{Guest: &raftfsm.GuestReport{Agent: true}}
	for _, tc := range []struct {
		name   string
		vm     raftfsm.VM
		silent time.Time
		want   time.Duration
	}{
		{"not answered yet, just started", raftfsm.VM{}, time.Time{}, agentProbeEvery},
		{"silent for a minute", raftfsm.VM{}, now.Add(-time.Minute), agentProbeEvery},
		{"silent past its patience", raftfsm.VM{}, now.Add(-agentPatience - time.Second), agentRefreshEvery},
		{"answered before", answered, time.Time{}, agentRefreshEvery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &vmWorker{agentSilent: tc.silent}
			if got := w.agentEvery(tc.vm); got != tc.want {
				t.Fatalf("%v, want %v", got, tc.want)
			}
		})
	}
	w := &vmWorker{}
	w.agentAnswered(false)
	first := w.agentSilent
	w.agentAnswered(false)
	if first.IsZero() || !w.agentSilent.Equal(first) {
		t.Fatalf("silent since %v then %v, want the first silence kept", first, w.agentSilent)
	}
	if w.agentAnswered(true); !w.agentSilent.IsZero() {
		t.Fatal("an answer did not end the silence")
	}
}

// A run that went through the guest's agent makes the worker ask the
// agent what the guest is at its next run, not at its next probe: the VM's
// guest line says the agent answers as soon as it does (before, `vm get`
// still said "booting" after `vm run` had worked).
func TestAskAgent_at_once_after_a_run_went_through(t *testing.T) {
	ctx := context.Background()
	drv := fake.NewAgent(fake.New(hypervisor.DomainPrefix("n1")))
	name := hypervisor.DomainName("n1", api.DefaultNamespace, "web")
	if err := drv.Create(ctx, hypervisor.Spec{Name: name, CPU: 1, MemoryMiB: 64}); err != nil {
		t.Fatal(err)
	}
	w := &vmWorker{h: &Host{cfg: Config{Driver: drv}}, domain: name, agentAsked: time.Now()}
	if r := w.askAgent(ctx, raftfsm.VM{}); r != nil {
		t.Fatalf("asked before its probe interval: %+v", r)
	}
	w.heard.Store(true)
	if r := w.askAgent(ctx, raftfsm.VM{}); r == nil || !r.Agent {
		t.Fatalf("after a run went through the agent: %+v, want its report at once", r)
	}
	if r := w.askAgent(ctx, raftfsm.VM{}); r != nil {
		t.Fatalf("asked again at once: %+v", r)
	}
}
