package vm

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// On real libvirt, a config with --hot 2: its node restores two guests
// from the template, which listen on no host port. Five deploys at once:
// the first two claim the pooled guests and are Running with their ports
// and screen, the rest start from the template; every VM has its own host
// name, machine id and SSH host keys (as an SSH client sees them) and
// answers on its own port; the pool refills to two. A hot VM deleted takes
// its guest along, never pooled again. The node killed with guests pooled
// leaves none behind and makes its pool again. (Ten deploys before: five
// still race for the two pooled guests and start three from the template
// at once, with half the guests under emulation; ten at once are
// BenchmarkDeploy_10_concurrent's and BenchmarkDeploy_hot_vs_template_vs_boot's.)
func TestLibvirtHotPool_deploys_at_once(t *testing.T) {
	image := guest.RequireLibvirt(t)
	c := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "hot", Subnet: 13, Templates: 2,
		Capacity: raftfsm.Capacity{CPU: 16, MemoryBytes: 8 << 30}})
	m := c.Members[0]
	cl := c.Client(m)
	kit.Upload(t, cl, "mini-linux", image)
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "ci", Image: "mini-linux", CPU: 1, Memory: 0.25, Warm: true, Hot: 2}); err != nil {
		t.Fatal(err)
	}
	kit.WaitWarmFor(t, c, cl, kit.TemplateWait, "ci", m.Name)
	kit.WaitHotFor(t, c, cl, 2*kit.HotFillWait, "ci", m.Name, 2)
	n, _ := m.Peer.FSM().Node(m.Name)
	for _, g := range n.Hot {
		if on := guest.QEMUListens(t, g.Domain); len(on) != 0 {
			t.Fatalf("hot guest %s listens on %v before any claim", g.Domain, on)
		}
	}

	// Five guests starting at once under emulation on two cores: minutes.
	// Each deploy waits for Running as long as it asks (its timeout, the
	// product's bound on a boot), then for SSH a short run's time.
	const deployWait = kit.GuestBootWait
	dctx, cancel := context.WithTimeout(context.Background(), deployWait+kit.GuestRunWait)
	defer cancel()
	var wg sync.WaitGroup
	const deploys = 5
	vms := make([]api.VM, deploys)
	took := make([]time.Duration, deploys)
	for i := range vms {
		wg.Go(func() {
			start := time.Now()
			vm, err := cl.DeployVM(dctx, kit.NS, api.DeployRequest{VMConfig: "ci", Name: fmt.Sprintf("hot-%d", i), Timeout: kit.Floatp(deployWait.Minutes())})
			if err != nil {
				t.Errorf("deploy %d: %v", i, err)
				return
			}
			if _, err := guest.WaitRun(dctx, kit.SSHAddr(vm), "admin", "admin", "true"); err != nil {
				t.Errorf("ssh %s: %v", vm.Name, err)
			}
			vms[i], took[i] = vm, time.Since(start)
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	hot, seen := 0, map[string]string{}
	var hotVM api.VM
	for i, vm := range vms {
		got, err := cl.GetVM(kit.Ctx(t), kit.NS, vm.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got.StartedFrom == raftfsm.StartedFromHot {
			hot, hotVM = hot+1, vm
		}
		if got.Identity == nil || got.Identity.State != api.IdentitySet {
			t.Errorf("%s is Running with identity %+v", vm.Name, got.Identity)
		}
		t.Logf("%s: from %s, a finished SSH command %v after the deploy call", vm.Name, got.StartedFrom, took[i].Round(time.Millisecond))
		if h := strings.TrimSpace(kit.GuestRun(t, c, vm, "hostname; cat /etc/hostname")); h != vm.Name+"\n"+vm.Name {
			t.Errorf("%s's host name: %q", vm.Name, h)
		}
		keys := []string{"machine id " + strings.TrimSpace(kit.GuestRun(t, c, vm, "cat /etc/machine-id"))}
		for _, algo := range []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256} {
			fp, err := guest.HostKey(kit.Ctx(t), kit.SSHAddr(vm), algo)
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, algo+" "+fp)
		}
		for _, k := range keys {
			if other, ok := seen[k]; ok {
				t.Errorf("%s and %s share %s", other, vm.Name, k)
			}
			seen[k] = vm.Name
		}
	}
	if hot < 2 {
		t.Fatalf("%d of %d deploys started from a hot guest, want the first two", hot, deploys)
	}
	// The hot VM's screen is its own, at its port with its password.
	vnc := net.JoinHostPort(hotVM.IP, strconv.Itoa(hotVM.VNC))
	if _, err := rfb.Authenticate(vnc, hotVM.VNCPassword, 10*time.Second); err != nil {
		t.Fatalf("the hot VM's screen with its password: %v", err)
	}
	kit.WaitHotFor(t, c, cl, 2*kit.HotFillWait, "ci", m.Name, 2)

	// Deleted, its guest goes with it and is never pooled again.
	rec, _ := m.Peer.FSM().VM(kit.NS, hotVM.Name)
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, hotVM.Name); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the hot VM's domain gone", kit.DomainGoneWait, func() error {
		doms, err := m.Libvirt.List(kit.Ctx(t))
		if err != nil {
			return err
		}
		for _, d := range doms {
			if d.Name == rec.Domain {
				return fmt.Errorf("%s still there", d.Name)
			}
		}
		return nil
	})
	if n, _ := m.Peer.FSM().Node(m.Name); n.HotFree("") != 0 || len(n.Hot) != 2 || n.Hot[0].Domain == rec.Domain || n.Hot[1].Domain == rec.Domain {
		t.Fatalf("free hot guests %+v", n.Hot)
	}
	if !strings.HasPrefix(rec.Domain, hypervisor.HotPrefix(m.Name)) {
		t.Fatalf("the hot VM's domain %q", rec.Domain)
	}

	// The node killed while guests are pooled: once it is back, no domain
	// of its old pool is left in libvirt, the pool is made again of new
	// guests, the VMs it ran go on, and a deploy claims a new guest.
	n, _ = m.Peer.FSM().Node(m.Name)
	var pooled []string
	for _, g := range n.Hot {
		pooled = append(pooled, g.Domain)
	}
	c.Crash(m)
	c.Restart(m)
	c.WaitCaughtUp(m)
	cl = c.Client(m)
	c.WaitFor("the pool made again of new guests, the old ones gone", 2*kit.HotFillWait, func() error {
		doms, err := m.Libvirt.List(kit.Ctx(t))
		if err != nil {
			return err
		}
		have := map[string]bool{}
		for _, d := range doms {
			have[d.Name] = true
		}
		for _, d := range pooled {
			if have[d] {
				return fmt.Errorf("the old pool's %s is still in libvirt", d)
			}
		}
		n, _ := m.Peer.FSM().Node(m.Name)
		if len(n.Hot) != 2 {
			return fmt.Errorf("free hot guests %+v", n.Hot)
		}
		for _, g := range n.Hot {
			if !have[g.Domain] {
				return fmt.Errorf("the free guest %s is not in libvirt", g.Domain)
			}
		}
		return nil
	})
	for _, vm := range vms {
		if vm.Name != hotVM.Name {
			if got := strings.TrimSpace(kit.GuestRun(t, c, vm, "hostname")); got != vm.Name {
				t.Fatalf("%s after the restart answers as %q", vm.Name, got)
			}
			break
		}
	}
	after, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{VMConfig: "ci", Name: "hot-after", Timeout: kit.Floatp(5)})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := cl.GetVM(kit.Ctx(t), kit.NS, after.Name); err != nil || got.StartedFrom != raftfsm.StartedFromHot {
		t.Fatalf("the deploy after the restart started from %q (%v), want a hot guest", got.StartedFrom, err)
	}
	if h := strings.TrimSpace(kit.GuestRun(t, c, after, "hostname")); h != after.Name {
		t.Fatalf("%s's host name: %q", after.Name, h)
	}
}
