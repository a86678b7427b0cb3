package node_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/node"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// On real libvirt: a warm config's node builds its template in the
// background; VMs deployed from the config then start from it (the
// template's boot, answering SSH), each on a disk of its own (a file one
// writes is in neither the other nor the next one restored) with its own
// ports and screen password; deleting the config removes the template.
func TestLibvirtCluster_warm_config(t *testing.T) {
	image := guest.RequireLibvirt(t)
	c := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "warm", Subnet: 5, Templates: 2,
		Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 8 << 30}})
	m := c.Members[0]
	cl := c.Client(m)
	upload(t, cl, "mini-linux", image)
	if _, err := cl.CreateVMConfig(ctx(t), ns, api.VMConfig{Name: "ci", Image: "mini-linux", CPU: 1, Memory: 0.25, Warm: true}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitWarmFor(t, c, cl, 3*time.Minute, "ci", m.Name)
	t.Logf("template ready %v after the config", time.Since(start).Round(time.Millisecond))

	deploy := func(name string) api.VM {
		t.Helper()
		start := time.Now()
		vm, err := cl.DeployVM(ctx(t), ns, api.DeployRequest{VMConfig: "ci", Name: name, Timeout: floatp(3)})
		if err != nil {
			t.Fatal(err)
		}
		guestRun(t, c, vm, "true")
		t.Logf("%s: Running and answering SSH %v after the deploy call", name, time.Since(start).Round(time.Millisecond))
		if got, err := cl.GetVM(ctx(t), ns, name); err != nil || got.StartedFrom != "template" {
			t.Fatalf("%s started from %q (%v), not the template", name, got.StartedFrom, err)
		}
		return vm
	}
	firstDeploy := time.Now()
	a, b := deploy("warm-a"), deploy("warm-b")
	// A restored guest's kernel booted when the template did, before any
	// deploy (its boot time, /proc/stat's btime, is the template's).
	for _, vm := range []api.VM{a, b} {
		btime, err := strconv.ParseInt(strings.TrimSpace(guestRun(t, c, vm, "awk '/^btime/{print $2}' /proc/stat")), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if booted := time.Unix(btime, 0); !booted.Before(firstDeploy.Add(-time.Second)) {
			t.Fatalf("%s booted at %v, after the deploys began (%v): it booted instead of starting from the template", vm.Name, booted, firstDeploy)
		}
	}
	// the guest agent set the restored guest's clock to the host's
	secs, err := strconv.ParseInt(strings.TrimSpace(guestRun(t, c, a, "date +%s")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if lag := time.Since(time.Unix(secs, 0)); lag > 3*time.Second || lag < -3*time.Second {
		t.Fatalf("a's clock is off by %v", lag)
	}
	if a.SSH == b.SSH || a.VNC == b.VNC || a.VNCPassword == b.VNCPassword {
		t.Fatalf("the two VMs share ports or a password: %+v %+v", a, b)
	}
	vnc := net.JoinHostPort(a.IP, strconv.Itoa(a.VNC))
	if _, err := rfb.Authenticate(vnc, a.VNCPassword, 10*time.Second); err != nil {
		t.Fatalf("a's screen with a's password: %v", err)
	}
	if _, err := rfb.Authenticate(vnc, b.VNCPassword, 10*time.Second); !errors.Is(err, rfb.ErrAuthFailed) {
		t.Fatalf("a's screen with b's password: %v", err)
	}
	guestRun(t, c, a, "echo only-a > /data/mark && sync")
	const probe = "cat /data/mark 2>/dev/null || echo absent"
	if got := strings.TrimSpace(guestRun(t, c, b, probe)); got != "absent" {
		t.Fatalf("b reads %q: the VMs share a disk", got)
	}
	if got := strings.TrimSpace(guestRun(t, c, deploy("warm-c"), probe)); got != "absent" {
		t.Fatalf("the next restore reads %q: a VM's writes reached the template", got)
	}

	templateFiles := func() []string {
		entries, _ := os.ReadDir(node.VMDir(m.DataDir))
		var out []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), hypervisor.TemplatePrefix(m.Name)) {
				out = append(out, e.Name())
			}
		}
		return out
	}
	if files := templateFiles(); len(files) == 0 {
		t.Fatal("no template files on the node")
	}
	if err := cl.DeleteVMConfig(ctx(t), ns, "ci"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the template's files removed", 30*time.Second, func() error {
		if files := templateFiles(); len(files) > 0 {
			return fmt.Errorf("left: %v", files)
		}
		doms, err := m.Libvirt.List(ctx(t))
		if err != nil {
			return err
		}
		for _, d := range doms {
			if strings.HasPrefix(d.Name, hypervisor.TemplatePrefix(m.Name)) {
				return fmt.Errorf("domain %s left", d.Name)
			}
		}
		return nil
	})
}
