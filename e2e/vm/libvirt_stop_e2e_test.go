package vm

import (
	"context"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/libvirt"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/peerclaim"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestLibvirtCluster_delete_then_stop_leaves_no_domain: a VM deleted and
// its peer stopped at once (svc vm delete, then make stop) leaves no domain
// behind: a peer that stops cleanly finishes the deletes it acknowledged.
func TestLibvirtCluster_delete_then_stop_leaves_no_domain(t *testing.T) {
	image := guest.RequireLibvirt(t)
	c := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "delstop", Subnet: 16})
	m := c.Members[0]
	cl := c.Client(m)
	kit.Upload(t, cl, "mini-linux", image)
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "mini-linux", Name: "brief", CPU: kit.Intp(1), Memory: kit.Floatp(0.25)})
	if err != nil {
		t.Fatal(err)
	}
	domain := hypervisor.DomainName(vm.Node, kit.NS, vm.Name)
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, vm.Name); err != nil {
		t.Fatal(err)
	}
	c.Stop(m)
	// The peer is stopped: what libvirt holds now is what it left.
	peerclaim.For(t, peerclaim.Peer(m.Name)) // its cluster's claim, held by this test
	lv, err := libvirt.New(libvirt.Config{Dir: peer.VMDir(m.DataDir), ImageDir: peer.ImageDir(m.DataDir), Prefix: hypervisor.DomainPrefix(m.Name)})
	if err != nil {
		t.Fatal(err)
	}
	defer lv.Close()
	doms, err := lv.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range doms {
		if d.Name == domain || strings.HasSuffix(d.Name, "."+kit.NS+"."+vm.Name) {
			t.Fatalf("the deleted VM's domain %s is left (%v) after a clean stop", d.Name, d.State)
		}
	}
}
