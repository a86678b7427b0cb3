package host

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// lateCreate is a driver whose Create goes on after its caller has stopped
// waiting, as go-libvirt's calls do (they take no context): it waits for
// release, then defines the domain.
type lateCreate struct {
	*fake.Driver
	entered     chan struct{} // closed when the first Create starts
	enteredOnce sync.Once
	release     chan struct{}
}

func (d *lateCreate) Create(ctx context.Context, s hypervisor.Spec) error {
	d.enteredOnce.Do(func() { close(d.entered) })
	<-d.release
	return d.Driver.Create(context.WithoutCancel(ctx), s)
}

// A VM deleted while its worker's define is under way loses its domain even
// when the define lands after the pass listed the domains: the pass that
// stops the worker removes the worker's domain whether it was listed or not,
// and no later pass is needed (the agent may stop right after).
func TestHost_domain_defined_after_the_listing_is_removed(t *testing.T) {
	r, images := seeded(t)
	drv := &lateCreate{Driver: fake.New(hypervisor.DomainPrefix("n1")), entered: make(chan struct{}), release: make(chan struct{})}
	h := New(Config{Name: "n1", Bind: "10.0.0.1", FSM: r.FSM, Driver: drv, Images: images, Proposer: r,
		Blobs: noFetch{}, Ready: r, Healthy: func() bool { return true }, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	h.ctx = ctx // the passes are run by hand, one at a time
	defer func() { cancel(); h.stopAll(); h.wg.Wait() }()

	r.Must(t, raftfsm.TypeVMCreate, vmOn("web", "n1", 20000))
	if err := h.pass(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-drv.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never created the domain")
	}
	r.Must(t, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: api.DefaultNamespace, Name: "web"})
	domain := hypervisor.DomainName("n1", api.DefaultNamespace, "web")
	doms, err := drv.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(doms) != 0 {
		t.Fatalf("domains before the define landed: %v", doms)
	}
	// The define lands while the pass below waits for the worker to stop,
	// after the pass has listed the domains.
	passed := make(chan error, 1)
	go func() { passed <- h.pass(ctx) }()
	poll.For(t, "the pass listed the domains", 10*time.Second, func() error {
		if n := drv.Lists(); n < 3 {
			return fmt.Errorf("%d listings", n)
		}
		return nil
	})
	close(drv.release)
	if err := <-passed; err != nil {
		t.Fatal(err)
	}
	poll.For(t, "the late domain removed", 10*time.Second, func() error {
		if st, ok := drv.State(domain); ok {
			return fmt.Errorf("domain %s is %s", domain, st)
		}
		return nil
	})
	if n := drv.Lists(); n != 3 {
		t.Fatalf("%d listings: a pass ran besides the two this test ran", n)
	}
}
