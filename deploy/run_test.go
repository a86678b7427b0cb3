package deploy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// The replicated state is what production waits on.
var _ Replica = (*raftfsm.FSM)(nil)

// replica holds VMs and wakes waiters at each change, as the FSM does.
type replica struct {
	mu      sync.Mutex
	vms     map[string]raftfsm.VM
	changed chan struct{}
}

func newReplica() *replica {
	return &replica{vms: map[string]raftfsm.VM{}, changed: make(chan struct{})}
}

func (r *replica) VM(n, name string) (raftfsm.VM, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	vm, ok := r.vms[n+"/"+name]
	return vm, ok
}

func (r *replica) WaitOn(ctx context.Context, _ raftfsm.Topic, cond func() bool) error {
	for {
		r.mu.Lock()
		ch := r.changed
		r.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// change applies fn to the VMs and wakes the waiters.
func (r *replica) change(fn func(vms map[string]raftfsm.VM)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(r.vms)
	close(r.changed)
	r.changed = make(chan struct{})
}

// placer records the placed VM Pending, then lets the node act on it.
type placer struct {
	r      *replica
	refuse error
	node   func(r *replica, vm raftfsm.VM)
}

func (p placer) Place(_ context.Context, pl scheduler.Placement) (raftfsm.VM, error) {
	if p.refuse != nil {
		return raftfsm.VM{}, p.refuse
	}
	vm := pl.VM
	vm.Node, vm.Status, vm.UID = "n1", raftfsm.VMPending, 7
	p.r.change(func(vms map[string]raftfsm.VM) { vms[vm.Namespace+"/"+vm.Name] = vm })
	if p.node != nil {
		go p.node(p.r, vm)
	}
	return vm, nil
}

// status has the node report vm's status (and error).
func status(st, reason, msg string) func(*replica, raftfsm.VM) {
	return func(r *replica, vm raftfsm.VM) {
		r.change(func(vms map[string]raftfsm.VM) {
			vm.Status, vm.ErrorReason, vm.ErrorMessage = st, reason, msg
			vms[vm.Namespace+"/"+vm.Name] = vm
		})
	}
}

func TestRunner_run(t *testing.T) {
	refused := raftfsm.NewRuleError(raftfsm.ErrConflict, "no node has room")
	cases := []struct {
		name     string
		refuse   error
		node     func(*replica, raftfsm.VM)
		timeout  time.Duration
		wantKind error
		wantMsg  string
		removed  bool
	}{
		{name: "running", node: status(raftfsm.VMRunning, "", "")},
		{name: "placement_refused", refuse: refused, wantKind: raftfsm.ErrConflict, wantMsg: "no node has room"},
		{name: "request_cannot_start", node: status(raftfsm.VMFailed, api.ReasonBadRequest, "no such ISO"),
			wantKind: raftfsm.ErrInvalid, wantMsg: `vm "web" cannot start: no such ISO`, removed: true},
		{name: "node_failed", node: status(raftfsm.VMFailed, api.ReasonInternalError, "disk full"),
			wantKind: ErrStartFailed, wantMsg: `vm "web" failed to start on node n1: disk full`, removed: true},
		{name: "deleted_meanwhile", node: func(r *replica, vm raftfsm.VM) {
			r.change(func(vms map[string]raftfsm.VM) { delete(vms, vm.Namespace+"/"+vm.Name) })
		}, wantKind: raftfsm.ErrNotFound, wantMsg: `vm "web" was deleted`, removed: true},
		{name: "not_running_in_time", timeout: 50 * time.Millisecond, wantKind: raftfsm.ErrTimeout,
			wantMsg: `vm "web" is Pending, not there yet after waiting: context deadline exceeded; the VM was removed`, removed: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newReplica()
			var mu sync.Mutex
			var removed []string
			run := Runner{
				Placer: placer{r: r, refuse: c.refuse, node: c.node}, Replica: r, WriteTimeout: 10 * time.Second,
				Remove: func(ctx context.Context, vm raftfsm.VM) error {
					mu.Lock()
					defer mu.Unlock()
					if _, ok := ctx.Deadline(); !ok {
						return errors.New("a removal without a deadline")
					}
					removed = append(removed, fmt.Sprintf("%s/%s@%d", vm.Namespace, vm.Name, vm.UID))
					return nil
				},
			}
			plan := Plan{Placement: scheduler.Placement{VM: raftfsm.VM{Namespace: ns, Name: "web"}}, Timeout: cmp.Or(c.timeout, 10*time.Second)}
			vm, err := run.Run(context.Background(), plan)
			if c.wantKind == nil {
				if err != nil || vm.Status != raftfsm.VMRunning {
					t.Fatalf("run: %+v, %v", vm, err)
				}
			} else if !errors.Is(err, c.wantKind) || err.Error() != c.wantMsg {
				t.Fatalf("run: %v, want %v saying %q", err, c.wantKind, c.wantMsg)
			}
			mu.Lock()
			defer mu.Unlock()
			want := []string(nil)
			if c.removed {
				want = []string{ns + "/web@7"}
			}
			if !slices.Equal(removed, want) {
				t.Fatalf("removed %v, want %v", removed, want)
			}
		})
	}
}

// A removal that fails is logged, and the deploy's own error answered.
func TestRunner_run_removal_fails(t *testing.T) {
	r := newReplica()
	var logged strings.Builder
	run := Runner{
		Placer: placer{r: r, node: status(raftfsm.VMFailed, api.ReasonInternalError, "disk full")}, Replica: r, WriteTimeout: time.Second,
		Remove: func(context.Context, raftfsm.VM) error { return fmt.Errorf("no leader: %w", raftfsm.ErrNotLeader) },
		Log:    slog.New(slog.NewTextHandler(&logged, nil)),
	}
	_, err := run.Run(context.Background(), Plan{Placement: scheduler.Placement{VM: raftfsm.VM{Namespace: ns, Name: "web"}}, Timeout: 10 * time.Second})
	if !errors.Is(err, ErrStartFailed) {
		t.Fatalf("run: %v", err)
	}
	if !strings.Contains(logged.String(), "cannot remove a failed deploy") {
		t.Fatalf("log: %q", logged.String())
	}
	// A deploy that timed out says so, not that its VM was removed.
	run.Placer = placer{r: r}
	_, err = run.Run(context.Background(), Plan{Placement: scheduler.Placement{VM: raftfsm.VM{Namespace: ns, Name: "late"}}, Timeout: 20 * time.Millisecond})
	if !errors.Is(err, raftfsm.ErrTimeout) || !strings.HasSuffix(err.Error(), "; the VM could not be removed: no leader: not the leader") {
		t.Fatalf("run: %v", err)
	}
}

type placerFunc func(context.Context, scheduler.Placement) (raftfsm.VM, error)

func (f placerFunc) Place(ctx context.Context, pl scheduler.Placement) (raftfsm.VM, error) {
	return f(ctx, pl)
}

// The placed VM carries when its deploy gives up on it (the wait and the
// removal's time after it), for the leader to delete it if the deploy
// cannot.
func TestRunner_run_deploy_by(t *testing.T) {
	r := newReplica()
	var by *time.Time
	run := Runner{
		Placer: placerFunc(func(ctx context.Context, pl scheduler.Placement) (raftfsm.VM, error) {
			by = pl.VM.DeployBy
			return placer{r: r, node: status(raftfsm.VMRunning, "", "")}.Place(ctx, pl)
		}),
		Replica: r, WriteTimeout: 15 * time.Second, Remove: func(context.Context, raftfsm.VM) error { return nil },
	}
	before := time.Now()
	if _, err := run.Run(context.Background(), Plan{Placement: scheduler.Placement{VM: raftfsm.VM{Namespace: ns, Name: "web"}}, Timeout: 10 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	if by == nil || by.Before(before.Add(10*time.Minute+15*time.Second)) || by.After(time.Now().Add(10*time.Minute+15*time.Second)) {
		t.Fatalf("deployBy %v, want 10m15s after the call", by)
	}
}
