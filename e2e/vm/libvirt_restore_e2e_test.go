package vm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestLibvirtCluster_restore_recreates_a_vm: a VM deleted after a snapshot
// comes back when the snapshot is restored: its host makes it again from
// its image, and it answers SSH on its old port, named as before.
func TestLibvirtCluster_restore_recreates_a_vm(t *testing.T) {
	image := guest.RequireLibvirt(t)
	c := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "restorevm", Subnet: 17})
	m := c.Members[0]
	cl := c.Client(m)
	kit.Upload(t, cl, "mini-linux", image)
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "mini-linux", Name: "keep", CPU: kit.Intp(1), Memory: kit.Floatp(0.25)})
	if err != nil {
		t.Fatal(err)
	}
	// Named by the image's identity step, which runs once the guest's agent answers.
	if err := cl.WaitGuestReady(context.Background(), kit.NS, vm.Name, kit.GuestBootWait); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(kit.GuestRun(t, c, vm, "uname -n")); got != "keep" {
		t.Fatalf("uname -n: %q", got)
	}
	var snap bytes.Buffer
	if _, err := cl.SaveSnapshot(kit.Ctx(t), &snap); err != nil {
		t.Fatal(err)
	}
	domain := hypervisor.DomainName(vm.Node, kit.NS, vm.Name)
	hasDomain := func() (bool, error) {
		doms, err := m.Libvirt.List(context.Background())
		if err != nil {
			return false, err
		}
		for _, d := range doms {
			if d.Name == domain {
				return d.State == hypervisor.StateRunning, nil
			}
		}
		return false, nil
	}
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, vm.Name); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the deleted VM's domain gone", kit.DomainGoneWait, func() error {
		doms, err := m.Libvirt.List(context.Background())
		for _, d := range doms {
			if d.Name == domain {
				return fmt.Errorf("%s is still there", d.Name)
			}
		}
		return err
	})
	if _, err := cl.RestoreSnapshot(kit.Ctx(t), bytes.NewReader(snap.Bytes())); err != nil {
		t.Fatalf("restore: %v", err)
	}
	c.WaitFor("the VM made again and running", kit.GuestBootWait, func() error {
		running, err := hasDomain()
		if err != nil {
			return err
		}
		if !running {
			return errors.New("no running domain yet")
		}
		got, err := cl.GetVM(kit.Ctx(t), kit.NS, vm.Name)
		if err != nil {
			return err
		}
		if got.Status != api.StatusRunning || got.SSH != vm.SSH {
			return fmt.Errorf("%s on ssh port %d (was %d)", got.Status, got.SSH, vm.SSH)
		}
		return nil
	})
	if err := cl.WaitGuestReady(context.Background(), kit.NS, vm.Name, kit.GuestBootWait); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(kit.GuestRun(t, c, vm, "uname -n")); got != "keep" {
		t.Fatalf("uname -n of the VM made again: %q", got)
	}
}
