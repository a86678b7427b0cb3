package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/testcluster"
)

// A new VM whose first start fails because the host was short of a
// resource for a moment (libvirt's "failed to load cgroup BPF prog:
// Resource temporarily unavailable" with ten domains starting at once) is
// tried again, not Failed: its deploy answers Running.
func TestVM_new_vm_retried_after_a_transient_failure(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	dom := hypervisor.DomainName(m.Name, kit.NS, "burst")
	m.Fake.SetCreateError(fmt.Errorf("failed to load cgroup BPF prog: %w", hypervisor.ErrTransient))
	deployed := make(chan error, 1)
	go func() {
		vm, err := cl.DeployVM(context.Background(), kit.NS, api.DeployRequest{Image: "tiny", Name: "burst", CPU: kit.Intp(1)})
		if err == nil && vm.Status != api.StatusRunning {
			err = fmt.Errorf("deployed %s", vm.Status)
		}
		deployed <- err
	}()
	c.WaitFor("a failed first create", 10*time.Second, func() error {
		for _, call := range m.Fake.Calls() {
			if call == "create "+dom {
				return nil
			}
		}
		return fmt.Errorf("no attempt yet")
	})
	m.Fake.SetCreateError(nil)
	select {
	case err := <-deployed:
		if err != nil {
			t.Fatalf("deploy: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the deploy did not answer")
	}
}
