package vm

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Orka's Packer flow with its clients (client-go discovery, a
// controller-runtime client) on real libvirt, on orka-default: a VMI of
// mini-linux watched to Running, SSH to the address and port its status
// gives (a file written on its disk), saved through the images resource
// and watched Ready, pushed to the test registry with its job followed as
// a pod to Succeeded, deleted.
func TestLibvirtCluster_orka_tools_flow(t *testing.T) {
	image := guest.RequireLibvirt(t)
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "orka", Subnet: 18,
		Configure: func(_ int, cfg *peer.Config) { cfg.NamespaceAlias = "orka-default" }})
	m := c.Members[0]
	kit.Upload(t, c.Client(m), "mini-linux", image)
	kit.OrkaToolsFlow(t, c, m, reg, kit.OrkaFlow{Image: "mini-linux", Wait: kit.PushWait, Running: func(host string, port int) {
		sctx, cancel := context.WithTimeout(context.Background(), kit.GuestBootWait)
		defer cancel()
		addr := net.JoinHostPort(host, strconv.Itoa(port))
		out, err := guest.WaitRun(sctx, addr, "admin", "admin", "echo built by packer > /data/proof && sync && cat /data/proof")
		if err != nil || strings.TrimSpace(out) != "built by packer" {
			t.Fatalf("ssh %s: %q %v", addr, out, err)
		}
	}})
}
