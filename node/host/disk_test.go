package host

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// A VM's disk is promised its whole size on the node's disk before it is
// made: one that does not fit above the floor fails with a Conflict that
// says what is free, kept and promised, and its domain is never made; one
// that fits runs. A resize takes room the same way.
func TestHost_disk_budget_cases(t *testing.T) {
	const gib = 1 << 30
	r, images := seeded(t)
	drv := fake.New(hypervisor.DomainPrefix("n1"))
	disk := diskbudget.New(diskbudget.Config{Dir: t.TempDir(), Floor: gib, Name: "n1", Free: func() (int64, error) { return 6 * gib, nil }})
	h := New(Config{Name: "n1", Bind: "10.0.0.1", FSM: r.FSM, Driver: drv, Images: images, Proposer: r, Disk: disk,
		Blobs: noFetch{}, Ready: r, Healthy: func() bool { return true }, Interval: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	for i, tc := range []struct {
		name   string
		size   int64
		status string
	}{
		{"a disk over the room", 8 * gib, raftfsm.VMFailed},
		{"a disk within it", 2 * gib, raftfsm.VMRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := vmOn(fmt.Sprintf("vm-%d", i), "n1", 20000+10*i)
			c.VM.BaseDiskBytes = tc.size
			r.Must(t, raftfsm.TypeVMCreate, c)
			var vm raftfsm.VM
			poll.For(t, "the VM "+tc.status, 10*time.Second, func() error {
				vm, _ = r.FSM.VM(api.DefaultNamespace, c.VM.Name)
				if vm.Status != tc.status {
					return fmt.Errorf("vm is %q (%s)", vm.Status, vm.ErrorMessage)
				}
				return nil
			})
			if tc.status == raftfsm.VMFailed {
				if vm.ErrorReason != api.ReasonConflict || !strings.Contains(vm.ErrorMessage, "no room") || !strings.Contains(vm.ErrorMessage, "kept free") {
					t.Fatalf("failed as %q: %s", vm.ErrorReason, vm.ErrorMessage)
				}
				if st, made := drv.State(hypervisor.DomainName("n1", vm.Namespace, vm.Name)); made {
					t.Fatalf("a domain was made (%s)", st)
				}
			}
		})
	}
	vm, _ := r.FSM.VM(api.DefaultNamespace, "vm-1")
	if _, err := h.ResizeDisk(ctx, vm, 6*gib); !errors.Is(err, hypervisor.ErrNoSpace) || !strings.Contains(err.Error(), "kept free") {
		t.Fatalf("a resize over the room: %v", err)
	}
}
