package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// hotDomains returns the hot guests' domains on member m (claimed or not).
func hotDomains(t *testing.T, m *testcluster.Member) []string {
	t.Helper()
	doms, err := m.Fake.List(kit.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range doms {
		if strings.HasPrefix(d.Name, hypervisor.HotPrefix(m.Name)) {
			out = append(out, d.Name)
		}
	}
	return out
}

// A config with --hot 2 on one node: ten deploys at once, the first two (and
// those that find a guest refilled meanwhile) claim pooled guests (their
// domains are the guests', given the VM's ports, each made its own by the
// pool and named after its VM), the rest start from the template, every VM
// on a domain of its own; the pool refills to 2.
// A claimed guest's VM deleted takes its domain along, never pooled again;
// hot 0 drains the pool, and so does a cordon.
func TestHotPool_claims_and_refills(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Templates: 2, GuestAgent: true, Capacity: raftfsm.Capacity{CPU: 32, MemoryBytes: 64 << 30}})
	m := c.WaitLeader()
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "ci", Image: "tiny", CPU: 1, Memory: 1, Warm: true, Hot: 2}); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, c, cl, "ci", m.Name)
	kit.WaitHot(t, c, cl, "ci", m.Name, 2)
	pooled := hotDomains(t, m)
	if len(pooled) != 2 {
		t.Fatalf("hot domains %v", pooled)
	}
	var wg sync.WaitGroup
	vms := make([]api.VM, 10)
	errs := make([]error, 10)
	for i := range vms {
		wg.Go(func() {
			vms[i], errs[i] = cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{VMConfig: "ci", Name: fmt.Sprintf("vm-%d", i)})
		})
	}
	wg.Wait()
	hot, domains := 0, map[string]string{}
	for i, vm := range vms {
		if errs[i] != nil {
			t.Fatalf("deploy %d: %v", i, errs[i])
		}
		got, err := c.Client(m).GetVM(kit.Ctx(t), kit.NS, vm.Name)
		if err != nil || got.Status != api.StatusRunning {
			t.Fatalf("vm %s: %+v %v", vm.Name, got, err)
		}
		rec, _ := m.Peer.FSM().VM(kit.NS, vm.Name)
		domain := hypervisor.DomainFor(m.Name, kit.NS, vm.Name, rec.Domain)
		if other, ok := domains[domain]; ok {
			t.Fatalf("%s and %s share domain %s", vm.Name, other, domain)
		}
		domains[domain] = vm.Name
		if got.StartedFrom == raftfsm.StartedFromHot {
			hot++
			if !strings.HasPrefix(domain, hypervisor.HotPrefix(m.Name)) {
				t.Fatalf("%s started hot on domain %s", vm.Name, domain)
			}
			// The pool made it its own; the claim named it after its VM.
			runs := m.FakeAgent.IdentityRuns(domain)
			if len(runs) != 2 || !strings.HasSuffix(runs[0], " restore") || runs[1] != vm.Name+" boot" {
				t.Fatalf("identity steps of %s: %v", vm.Name, runs)
			}
			spec, _ := m.Fake.Spec(domain)
			if spec.VNCPort != vm.VNC || len(spec.Forwards) == 0 || spec.Forwards[0].HostPort != vm.SSH {
				t.Fatalf("the hot guest of %s was not given its ports: %+v", vm.Name, spec)
			}
		}
	}
	// The fake restores in no time: the pool refills while the deploys
	// come, and more than the first two may find a guest.
	if hot < 2 {
		t.Fatalf("%d deploys started hot, want 2 or more", hot)
	}
	t.Logf("%d of 10 deploys started hot", hot)
	kit.WaitHot(t, c, cl, "ci", m.Name, 2)
	// A claimed guest's VM deleted: its domain goes, never pooled again.
	var claimed string
	for d, name := range domains {
		if strings.HasPrefix(d, hypervisor.HotPrefix(m.Name)) {
			claimed = d
			if err := cl.DeleteVM(kit.Ctx(t), kit.NS, name); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	c.WaitFor("the deleted VM's hot domain gone", 30*time.Second, func() error {
		if _, ok := m.Fake.State(claimed); ok {
			return fmt.Errorf("%s still there", claimed)
		}
		return nil
	})
	if n, _ := m.Peer.FSM().Node(m.Name); len(n.Hot) != 2 || slices.ContainsFunc(n.Hot, func(g raftfsm.HotGuest) bool { return g.Domain == claimed }) {
		t.Fatalf("free hot guests %+v", n.Hot)
	}
	// hot 0 drains the pool: the free guests go.
	zero := 0
	if _, err := cl.ChangeVMConfig(kit.Ctx(t), kit.NS, "ci", api.VMConfigChange{Hot: &zero}); err != nil {
		t.Fatal(err)
	}
	free := func() int { n, _ := m.Peer.FSM().Node(m.Name); return len(n.Hot) }
	c.WaitFor("the pool drained", 30*time.Second, func() error {
		if n := free(); n != 0 || len(hotDomains(t, m)) != hot-1 { // the claimed VMs' left
			return fmt.Errorf("%d free, domains %v", n, hotDomains(t, m))
		}
		return nil
	})
	// Hot again, then a cordon drains it too.
	two := 2
	if _, err := cl.ChangeVMConfig(kit.Ctx(t), kit.NS, "ci", api.VMConfigChange{Hot: &two}); err != nil {
		t.Fatal(err)
	}
	kit.WaitHot(t, c, cl, "ci", m.Name, 2)
	if _, err := cl.CordonNode(kit.Ctx(t), kit.NS, m.Name); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the pool drained by the cordon", 30*time.Second, func() error {
		if n := free(); n != 0 || len(hotDomains(t, m)) != hot-1 {
			return fmt.Errorf("%d free, domains %v", n, hotDomains(t, m))
		}
		return nil
	})
}

// deployAll deploys n VMs of config ci at once and returns them, Running.
func deployAll(t *testing.T, cl *api.Client, prefix string, n int) []api.VM {
	t.Helper()
	vms, err := deployEach(cl, prefix, n)
	if err != nil {
		t.Fatal(err)
	}
	return vms
}

// deployEach is deployAll for a goroutine (which must not end its test):
// the first deploy that failed or did not run is its error.
func deployEach(cl *api.Client, prefix string, n int) ([]api.VM, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	vms, errs := make([]api.VM, n), make([]error, n)
	for i := range vms {
		wg.Go(func() {
			vms[i], errs[i] = cl.DeployVM(ctx, kit.NS, api.DeployRequest{VMConfig: "ci", Name: fmt.Sprintf("%s-%d", prefix, i)})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || vms[i].Status != api.StatusRunning {
			return nil, fmt.Errorf("deploy %d: %+v %v", i, vms[i], err)
		}
	}
	return vms, nil
}

// startedFrom counts the VMs by how they started, and fails on two VMs on
// one domain.
func startedFrom(t *testing.T, m *testcluster.Member, vms []api.VM) map[string]int {
	t.Helper()
	out, domains := map[string]int{}, map[string]bool{}
	for _, vm := range vms {
		rec, ok := m.Peer.FSM().VM(kit.NS, vm.Name)
		if !ok {
			t.Fatalf("no record of %s", vm.Name)
		}
		d := hypervisor.DomainFor(m.Name, kit.NS, vm.Name, rec.Domain)
		if domains[d] {
			t.Fatalf("two VMs on domain %s", d)
		}
		domains[d] = true
		out[rec.StartedFrom]++
	}
	return out
}

// A peer that restarts destroys the hot guests it held (none is left
// behind in the hypervisor) and fills its pool again with new ones.
func TestHotPool_restart_rebuilds(t *testing.T) {
	c, m, _ := kit.HotRig(t, 2)
	before := hotDomains(t, m)
	c.Crash(m)
	c.Restart(m)
	c.WaitCaughtUp(m)
	cl := c.Client(c.WaitLeader())
	c.WaitFor("the pool rebuilt with new guests", 30*time.Second, func() error {
		now := hotDomains(t, m)
		n, _ := m.Peer.FSM().Node(m.Name)
		if len(now) != 2 || len(n.Hot) != 2 || slices.ContainsFunc(now, func(d string) bool { return slices.Contains(before, d) }) {
			return fmt.Errorf("hot domains %v (before %v), free %+v", now, before, n.Hot)
		}
		for _, g := range n.Hot {
			if !slices.Contains(now, g.Domain) {
				return fmt.Errorf("free guest %s is not in the hypervisor", g.Domain)
			}
		}
		return nil
	})
	if got := startedFrom(t, m, deployAll(t, cl, "after", 1)); got[raftfsm.StartedFromHot] != 1 {
		t.Fatalf("after the restart: %v", got)
	}
}

// A pool whose guests would pass the node's --hot-max-memory keeps what
// fits; deploys past it start from the template, none fails.
func TestHotPool_memory_cap(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Templates: 1, GuestAgent: true, Capacity: raftfsm.Capacity{CPU: 32, MemoryBytes: 64 << 30},
		Configure: func(_ int, cfg *peer.Config) { cfg.HotMaxMemory = 1 << 30 }})
	m := c.WaitLeader()
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "ci", Image: "tiny", CPU: 1, Memory: 1, Warm: true, Hot: 3}); err != nil {
		t.Fatal(err)
	}
	kit.WaitHot(t, c, cl, "ci", m.Name, 1)
	if d := hotDomains(t, m); len(d) != 1 {
		t.Fatalf("hot domains past the cap: %v", d)
	}
	vms := deployAll(t, cl, "capped", 3)
	if got := startedFrom(t, m, vms); got[raftfsm.StartedFromHot] < 1 || got[raftfsm.StartedFromHot]+got[raftfsm.StartedFromTemplate] != 3 {
		t.Fatalf("started from %v", got)
	}
	kit.WaitHot(t, c, cl, "ci", m.Name, 1)
}

// The config's hot count changed while deploys claim its guests: every
// deploy runs, no two VMs share a guest, and once it settles the pool holds
// what the config says and nothing else is left in the hypervisor.
func TestHotPool_config_changed_during_claims(t *testing.T) {
	c, m, cl := kit.HotRig(t, 2)
	type deployed struct {
		vms []api.VM
		err error
	}
	done := make(chan deployed, 1)
	go func() {
		vms, err := deployEach(cl, "during", 8)
		done <- deployed{vms, err}
	}()
	for _, hot := range []int{0, 3, 1} {
		if _, err := cl.ChangeVMConfig(kit.Ctx(t), kit.NS, "ci", api.VMConfigChange{Hot: &hot}); err != nil {
			t.Fatal(err)
		}
	}
	d := <-done // deployEach's calls are bounded
	if d.err != nil {
		t.Fatal(d.err)
	}
	vms := d.vms
	got := startedFrom(t, m, vms)
	// A VM whose guest the pool drained as the deploy claimed it starts
	// from the template, under the claimed guest's domain name.
	claimed := 0
	for _, vm := range vms {
		if rec, _ := m.Peer.FSM().VM(kit.NS, vm.Name); rec.Domain != "" {
			claimed++
		}
	}
	kit.WaitHot(t, c, cl, "ci", m.Name, 1)
	c.WaitFor("only the VMs' and the pool's hot domains left", 30*time.Second, func() error {
		if d := hotDomains(t, m); len(d) != claimed+1 {
			return fmt.Errorf("hot domains %v, %d VMs claimed a guest", d, claimed)
		}
		return nil
	})
	t.Logf("eight deploys while the hot count changed: %v", got)
}
