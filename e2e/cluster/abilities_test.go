package cluster

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// A hypervisor without an optional role (here: lifecycle only, no pause
// and no disk work) runs VMs; what it cannot do fails plainly, saying so,
// and is never attempted.
func TestVM_hypervisor_without_optional_roles(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{LifecycleOnly: true})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "plain", CPU: kit.Intp(1)}); err != nil {
		t.Fatalf("deploy on a lifecycle-only hypervisor: %v", err)
	}
	for _, action := range []string{"stop", "start"} {
		if _, err := cl.ExecVM(kit.Ctx(t), kit.NS, "plain", action); err != nil {
			t.Fatalf("%s: %v", action, err)
		}
	}
	_, _ = cl.ExecVM(kit.Ctx(t), kit.NS, "plain", "suspend")
	c.WaitFor("the suspend refused", 10*time.Second, func() error {
		vm, err := cl.GetVM(kit.Ctx(t), kit.NS, "plain")
		if err != nil || vm.Status != api.StatusFailed || !strings.Contains(vm.ErrorMessage, "suspend: the host's hypervisor cannot do this") {
			return fmt.Errorf("%s %q %v", vm.Status, vm.ErrorMessage, err)
		}
		return nil
	})
	for _, call := range c.Members[0].Fake.Calls() {
		if strings.HasPrefix(call, "suspend") {
			t.Fatalf("the driver was asked to %s", call)
		}
	}
}
