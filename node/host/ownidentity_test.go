package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// restoring is a booted template for every VM: it starts the VM's domain at
// once, as a restore from a saved guest would.
type restoring struct{ drv hypervisor.Driver }

func (r restoring) Restore(ctx context.Context, _ raftfsm.VM, spec hypervisor.Spec) (bool, error) {
	return true, r.drv.Create(ctx, spec)
}

// recording keeps every VM status report written.
type recording struct {
	*replica
	mu      sync.Mutex
	reports []raftfsm.VMStatus
}

func (r *recording) Apply(ctx context.Context, typ raftfsm.Type, body any) (any, error) {
	if s, ok := body.(raftfsm.VMStatus); ok {
		r.mu.Lock()
		r.reports = append(r.reports, s)
		r.mu.Unlock()
	}
	return r.replica.Apply(ctx, typ, body)
}

// firstRunning returns the first report that said the VM is Running.
func (r *recording) firstRunning() (raftfsm.VMStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.reports, func(s raftfsm.VMStatus) bool { return s.Status == raftfsm.VMRunning })
	if i < 0 {
		return raftfsm.VMStatus{}, false
	}
	return r.reports[i], true
}

// Every VM the node starts is made its own by its image's identity step,
// and its record says how that went: a restored VM before it is Running, a
// booted one once its agent answers; an image without a step, or a
// hypervisor without an agent, is reported, not passed over.
func TestHost_identity_step(t *testing.T) {
	cases := []struct {
		name    string
		noAgent bool // the hypervisor has no guest agent
		noStep  bool // the image ships no identity step
		silent  bool // the guest's agent never answers
		late    bool // the guest's agent answers 3 s after the deploy
		restore bool // the VM starts from a booted template
		state   string
		message string // in the record's message
		runs    []string
	}{
		{name: "booted", state: raftfsm.IdentitySet, runs: []string{"web boot"}},
		// It answers what it is (a minute before it is asked again) a
		// probe before the step is due again: the step runs at once.
		{name: "booted, its agent up late", late: true, state: raftfsm.IdentitySet, runs: []string{"web boot"}},
		{name: "restored", restore: true, state: raftfsm.IdentitySet, runs: []string{"web restore"}},
		{name: "an image without a step", noStep: true, state: raftfsm.IdentityNone, message: "no identity step"},
		{name: "restored, an image without a step", noStep: true, restore: true, state: raftfsm.IdentityNone, message: "no identity step"},
		{name: "a hypervisor without an agent", noAgent: true, state: raftfsm.IdentityNone, message: "no guest agent"},
		{name: "a guest whose agent never answers", silent: true, state: raftfsm.IdentityNone, message: "no guest agent answered within 300ms"},
		{name: "restored, its agent never answers", silent: true, restore: true, state: raftfsm.IdentityNone, message: "no guest agent answered within 300ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seed, images := seeded(t)
			r := &recording{replica: seed}
			fk := fake.New(hypervisor.DomainPrefix("n1"))
			agent := fake.NewAgent(fk)
			agent.NoIdentityStep, agent.Silent = c.noStep, c.silent
			wait := 300 * time.Millisecond
			if c.late {
				agent.AnswerFrom, agent.NoAnswerWait, wait = time.Now().Add(3*time.Second), 300*time.Millisecond, 10*time.Second
			}
			var drv hypervisor.Driver = agent
			if c.noAgent {
				drv = fk
			}
			// Passes every 100 ms, as a node's VM passes recur.
			cfg := Config{Name: "n1", Bind: "10.0.0.1", FSM: r.FSM, Driver: drv, Images: images, Proposer: r,
				Blobs: noFetch{}, Ready: r, Healthy: func() bool { return true }, Interval: 100 * time.Millisecond, AgentWait: wait}
			if c.restore {
				cfg.Templates = restoring{drv: drv}
			}
			h := New(cfg)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { h.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()

			r.Must(t, raftfsm.TypeVMCreate, vmOn("web", "n1", 20000))
			poll.For(t, "the identity reported", 10*time.Second, func() error {
				vm, _ := r.FSM.VM(api.DefaultNamespace, "web")
				if vm.Status != raftfsm.VMRunning || vm.Identity == nil || vm.Identity.State != c.state {
					return fmt.Errorf("vm web is %q, identity %+v", vm.Status, vm.Identity)
				}
				return nil
			})
			vm, _ := r.FSM.VM(api.DefaultNamespace, "web")
			if !strings.Contains(vm.Identity.Message, c.message) {
				t.Errorf("identity message %q, want it to say %q", vm.Identity.Message, c.message)
			}
			if got := agent.IdentityRuns(hypervisor.DomainName("n1", api.DefaultNamespace, "web")); !slices.Equal(got, c.runs) {
				t.Errorf("identity steps run %q, want %q", got, c.runs)
			}
			first, _ := r.firstRunning()
			if c.restore && (first.Identity == nil || first.Identity.State != c.state) {
				t.Errorf("a restored VM was reported Running with identity %+v before its step ran", first.Identity)
			}
		})
	}
}

// holdingBlobs is a blob source that counts the holds on each blob.
type holdingBlobs struct {
	mu    sync.Mutex
	holds map[string]int
}

func (b *holdingBlobs) EnsureBlob(context.Context, raftfsm.VM, string) error { return nil }

func (b *holdingBlobs) HoldBlob(digest string) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holds[digest]++
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.holds[digest]--
		})
	}, nil
}

func (b *holdingBlobs) held(digest string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.holds[digest]
}

// checkingCreate is a fake hypervisor that notes, at each Create, whether
// the VM's blob was held.
type checkingCreate struct {
	*fake.Driver
	blobs *holdingBlobs
	mu    sync.Mutex
	seen  []int
}

func (d *checkingCreate) Create(ctx context.Context, s hypervisor.Spec) error {
	d.mu.Lock()
	d.seen = append(d.seen, d.blobs.held("sha256:aa"))
	d.mu.Unlock()
	return d.Driver.Create(ctx, s)
}

// A VM's blob is held from when it is here until the VM's domain (and its
// disk) exists, and let go after.
func TestHost_holds_the_blob_until_the_disk_exists(t *testing.T) {
	r, images := seeded(t)
	blobs := &holdingBlobs{holds: map[string]int{}}
	drv := &checkingCreate{Driver: fake.New(hypervisor.DomainPrefix("n1")), blobs: blobs}
	h := New(Config{Name: "n1", Bind: "10.0.0.1", FSM: r.FSM, Driver: drv, Images: images, Proposer: r,
		Blobs: blobs, Ready: r, Healthy: func() bool { return true }, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	r.Must(t, raftfsm.TypeVMCreate, vmOn("web", "n1", 20000))
	poll.For(t, "the VM running and its blob let go", 10*time.Second, func() error {
		vm, _ := r.FSM.VM(api.DefaultNamespace, "web")
		if vm.Status != raftfsm.VMRunning || blobs.held("sha256:aa") != 0 {
			return fmt.Errorf("vm %q, blob held %d times", vm.Status, blobs.held("sha256:aa"))
		}
		return nil
	})
	drv.mu.Lock()
	defer drv.mu.Unlock()
	if len(drv.seen) != 1 || drv.seen[0] != 1 {
		t.Fatalf("the blob was held %v times at the creates", drv.seen)
	}
}
