package node_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// hotDomains returns the hot guests' domains on member m (claimed or not).
func hotDomains(t *testing.T, m *testcluster.Member) []string {
	t.Helper()
	doms, err := m.Fake.List(ctx(t))
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

// waitHot waits until the config shows want free hot guests on node.
func waitHot(t *testing.T, c *testcluster.Cluster, cl *api.Client, config, node string, want int) {
	t.Helper()
	waitHotFor(t, c, cl, 30*time.Second, config, node, want)
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
	upload(t, cl, "tiny", tinyImage(t))
	if _, err := cl.CreateVMConfig(ctx(t), ns, api.VMConfig{Name: "ci", Image: "tiny", CPU: 1, Memory: 1, Warm: true, Hot: 2}); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, c, cl, "ci", m.Name)
	waitHot(t, c, cl, "ci", m.Name, 2)
	pooled := hotDomains(t, m)
	if len(pooled) != 2 {
		t.Fatalf("hot domains %v", pooled)
	}
	var wg sync.WaitGroup
	vms := make([]api.VM, 10)
	errs := make([]error, 10)
	for i := range vms {
		wg.Go(func() {
			vms[i], errs[i] = cl.DeployVM(ctx(t), ns, api.DeployRequest{VMConfig: "ci", Name: fmt.Sprintf("vm-%d", i)})
		})
	}
	wg.Wait()
	hot, domains := 0, map[string]string{}
	for i, vm := range vms {
		if errs[i] != nil {
			t.Fatalf("deploy %d: %v", i, errs[i])
		}
		got, err := c.Client(m).GetVM(ctx(t), ns, vm.Name)
		if err != nil || got.Status != api.StatusRunning {
			t.Fatalf("vm %s: %+v %v", vm.Name, got, err)
		}
		rec, _ := m.Peer.FSM().VM(ns, vm.Name)
		domain := hypervisor.DomainFor(m.Name, ns, vm.Name, rec.Domain)
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
	waitHot(t, c, cl, "ci", m.Name, 2)
	// A claimed guest's VM deleted: its domain goes, never pooled again.
	var claimed string
	for d, name := range domains {
		if strings.HasPrefix(d, hypervisor.HotPrefix(m.Name)) {
			claimed = d
			if err := cl.DeleteVM(ctx(t), ns, name); err != nil {
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
	if _, err := cl.ChangeVMConfig(ctx(t), ns, "ci", api.VMConfigChange{Hot: &zero}); err != nil {
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
	if _, err := cl.ChangeVMConfig(ctx(t), ns, "ci", api.VMConfigChange{Hot: &two}); err != nil {
		t.Fatal(err)
	}
	waitHot(t, c, cl, "ci", m.Name, 2)
	if _, err := cl.CordonNode(ctx(t), ns, m.Name); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the pool drained by the cordon", 30*time.Second, func() error {
		if n := free(); n != 0 || len(hotDomains(t, m)) != hot-1 {
			return fmt.Errorf("%d free, domains %v", n, hotDomains(t, m))
		}
		return nil
	})
}
