package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

func TestVM_deploy_list_get_delete(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	f := c.Followers()[0]
	cl := c.Client(f)
	img := kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if img.Digest == "" || img.Size != "16M" || img.SourceType != "userUpload" {
		t.Fatalf("image %+v", img)
	}
	before := kit.NodeByName(t, cl, f.Name)
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Node: f.Name, Memory: kit.Floatp(1.5), CustomMetadata: map[string]string{"team": "ci"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(vm.Name, "vm-") || len(vm.Name) != 8 || vm.Status != api.StatusRunning || vm.CPU != api.DefaultCPU ||
		vm.Memory != "1.5Gi" || vm.IP != "127.0.0.1" || vm.SSH == 0 || vm.VNC == 0 || vm.Screenshare == 0 || vm.Node != f.Name ||
		vm.CustomMetadata["team"] != "ci" || vm.PortWarnings == nil {
		t.Fatalf("deployed %+v", vm)
	}
	spec, ok := f.Fake.Spec(hypervisor.DomainName(f.Name, kit.NS, vm.Name))
	if !ok || spec.CPU != 3 || spec.MemoryMiB != 1536 || spec.VNCPort != vm.VNC || spec.Forwards[0] != (hypervisor.Forward{HostPort: vm.SSH, GuestPort: 22}) ||
		len(vm.VNCPassword) != 8 || spec.VNCPassword != vm.VNCPassword {
		t.Fatalf("domain spec %+v", spec)
	}
	after := kit.NodeByName(t, cl, f.Name)
	if after.AvailableCPU != before.AvailableCPU-3 || after.AvailableMemory == before.AvailableMemory {
		t.Fatalf("availability did not drop: %+v -> %+v", before, after)
	}
	for _, m := range c.Members {
		c.WaitFor("the VM on "+m.Name, 10*time.Second, func() error {
			got, err := c.Client(m).GetVM(kit.Ctx(t), kit.NS, vm.Name)
			if err != nil || got.Status != api.StatusRunning {
				return fmt.Errorf("%+v %v", got, err)
			}
			list, err := c.Client(m).ListVMs(kit.Ctx(t), kit.NS)
			if err != nil || len(list) != 1 {
				return fmt.Errorf("list %v %v", list, err)
			}
			return nil
		})
	}
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, vm.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetVM(kit.Ctx(t), kit.NS, vm.Name); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("get after delete: %v", err)
	}
	if n := kit.NodeByName(t, cl, f.Name); n.AvailableCPU != before.AvailableCPU || n.AvailableMemory != before.AvailableMemory {
		t.Fatalf("availability not back: %+v", n)
	}
	c.WaitFor("the domain removed", 10*time.Second, func() error {
		if _, ok := f.Fake.Spec(hypervisor.DomainName(f.Name, kit.NS, vm.Name)); ok {
			return fmt.Errorf("still there")
		}
		return nil
	})
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, vm.Name); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("second delete: %v", err)
	}
}

func TestVM_exec_actions(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	cl := c.Client(c.Followers()[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "web", CPU: kit.Intp(1)})
	if err != nil {
		t.Fatal(err)
	}
	host := memberNamed(c, vm.Node)
	steps := []struct {
		action   string
		want     string
		wantCode int
	}{
		{"resume", "", http.StatusConflict},
		{"start", "", http.StatusConflict},
		{"suspend", api.StatusSuspended, 0},
		{"suspend", "", http.StatusConflict},
		{"resume", api.StatusRunning, 0},
		{"stop", api.StatusStopped, 0},
		{"stop", "", http.StatusConflict},
		{"start", api.StatusRunning, 0},
		{"revert", api.StatusRunning, 0},
		{"jump", "", http.StatusBadRequest},
	}
	for _, s := range steps {
		got, err := cl.ExecVM(kit.Ctx(t), kit.NS, "web", s.action)
		if s.wantCode != 0 {
			if api.CodeOf(err) != s.wantCode {
				t.Fatalf("%s: %v, want %d", s.action, err, s.wantCode)
			}
			continue
		}
		if err != nil || got.Status != s.want {
			t.Fatalf("%s: %+v %v", s.action, got, err)
		}
	}
	calls := strings.Join(host.Fake.Calls(), "\n")
	for _, want := range []string{"suspend svc.", "resume svc.", "stop svc.", "start svc.", "revert svc."} {
		if !strings.Contains(calls, want) {
			t.Fatalf("driver calls lack %q:\n%s", want, calls)
		}
	}
	if _, err := c.Client(leader).ExecVM(kit.Ctx(t), kit.NS, "nope", "start"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("exec on a missing VM: %v", err)
	}
}

func TestVM_bad_input(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Followers()[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	pinned := c.Members[0]
	_, apiPort, _ := net.SplitHostPort(pinned.Peer.APIAddr())
	_, raftPort, _ := net.SplitHostPort(pinned.Peer.RaftAddr())
	cases := []struct {
		name      string
		req       api.DeployRequest
		wantCode  int
		wantInMsg string
	}{
		{"no image", api.DeployRequest{}, 400, `field "image"`},
		{"bad name", api.DeployRequest{Image: "tiny", Name: "Bad_Name"}, 400, `field "name"`},
		{"cpu zero", api.DeployRequest{Image: "tiny", CPU: kit.Intp(0)}, 400, `field "cpu"`},
		{"cpu huge", api.DeployRequest{Image: "tiny", CPU: kit.Intp(1000)}, 400, `field "cpu"`},
		{"memory negative", api.DeployRequest{Image: "tiny", Memory: kit.Floatp(-1)}, 400, `field "memory"`},
		{"scheduler", api.DeployRequest{Image: "tiny", Scheduler: "random"}, 400, `field "scheduler"`},
		{"tag", api.DeployRequest{Image: "tiny", Tag: "a b"}, 400, `field "tag"`},
		{"reserved ports", api.DeployRequest{Image: "tiny", ReservedPorts: "8080-80"}, 400, `field "reservedPorts"`},
		{"reserved port in our range", api.DeployRequest{Image: "tiny", ReservedPorts: "20001:80"}, 400, `field "reservedPorts"`},
		{"privileged reserved port (the host's ssh)", api.DeployRequest{Image: "tiny", ReservedPorts: "22:22"}, 400, "privileged port of the host"},
		{"the node's API port", api.DeployRequest{Image: "tiny", CPU: kit.Intp(1), Node: pinned.Name, ReservedPorts: apiPort + ":80"}, 409, "port " + apiPort + " is taken"},
		{"the node's Raft port", api.DeployRequest{Image: "tiny", CPU: kit.Intp(1), Node: pinned.Name, ReservedPorts: raftPort + ":80"}, 409, "port " + raftPort + " is taken"},
		{"timeout", api.DeployRequest{Image: "tiny", Timeout: kit.Floatp(0)}, 400, `field "timeout"`},
		{"timeout under a minute", api.DeployRequest{Image: "tiny", Timeout: kit.Floatp(0.001)}, 400, `field "timeout"`},
		{"display", api.DeployRequest{Image: "tiny", DisplayWidth: kit.Intp(-5)}, 400, `field "displayWidth"`},
		{"metadata", api.DeployRequest{Image: "tiny", CustomMetadata: map[string]string{"": "x"}}, 400, `field "customMetadata"`},
		{"registry off limits", api.DeployRequest{Image: "registry.example/x:1"}, 403, "may not reach"},
		{"registry reference without a tag", api.DeployRequest{Image: "registry.example/x"}, 400, `field "image"`},
		{"registry host with a leading dash", api.DeployRequest{Image: "-127.0.0.70:5000/x:y"}, 400, `field "image"`},
		{"registry port over 65535", api.DeployRequest{Image: "127.0.0.1:99999/x:y"}, 400, `field "image"`},
		{"reference with a tag and a digest", api.DeployRequest{Image: "reg.example/x:y@sha256:" + strings.Repeat("a", 64)}, 400, `field "image"`},
		{"unknown image", api.DeployRequest{Image: "nope"}, 404, `image "nope" not found`},
		{"unknown node", api.DeployRequest{Image: "tiny", Node: "peer-9"}, 404, `node "peer-9" not found`},
		{"unknown vmconfig", api.DeployRequest{VMConfig: "nope"}, 404, `vmconfig "nope" not found`},
		{"unknown iso", api.DeployRequest{Image: "tiny", ISO: "x.iso"}, 404, `iso "x.iso" not found`},
		{"cluster full", api.DeployRequest{Image: "tiny", CPU: kit.Intp(64)}, 409, "not enough CPU"},
		{"tag nobody has", api.DeployRequest{Image: "tiny", Tag: "gpu", TagRequired: kit.Boolp(true)}, 409, "no tag gpu"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cl.DeployVM(kit.Ctx(t), kit.NS, tc.req)
			if api.CodeOf(err) != tc.wantCode || !strings.Contains(err.Error(), tc.wantInMsg) {
				t.Fatalf("got %v, want %d with %q", err, tc.wantCode, tc.wantInMsg)
			}
		})
	}
	// A deploy the hypervisor fails is removed again.
	for _, m := range c.Members {
		m.Fake.SetCreateError(errors.New("could not set up host forwarding rule"))
	}
	_, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "doomed", CPU: kit.Intp(1)})
	if api.CodeOf(err) != http.StatusInternalServerError || !strings.Contains(err.Error(), "host forwarding") {
		t.Fatalf("failed deploy: %v", err)
	}
	// Nothing is left allocated after the failures.
	if vms, _ := cl.ListVMs(kit.Ctx(t), kit.NS); len(vms) != 0 {
		t.Fatalf("VMs left: %+v", vms)
	}

	for _, n := range mustNodes(t, cl) {
		if n.AvailableCPU != n.AllocatableCPU || n.AvailableMemory != n.AllocatableMemory {
			t.Fatalf("node %s still has allocations: %+v", n.Name, n)
		}
	}
}

func mustNodes(t *testing.T, cl *api.Client) []api.Node {
	t.Helper()
	nodes, err := cl.ListNodes(kit.Ctx(t), kit.NS, true)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

func TestVM_racing_deploys_never_overcommit(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{}) // 4 CPUs a node, 12 in all
	c.WaitLeader()
	kit.Upload(t, c.Client(c.Members[0]), "tiny", kit.TinyImage(t))
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := c.Members[i%len(c.Members)] // through every peer
			_, err := c.Client(m).DeployVM(context.Background(), kit.NS, api.DeployRequest{Image: "tiny", CPU: kit.Intp(2), Memory: kit.Floatp(0.5)})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				codes[api.CodeOf(err)]++
			} else {
				codes[201]++
			}
		}()
	}
	wg.Wait()
	if codes[201] != 6 || codes[409] != 4 {
		t.Fatalf("answers %v, want 6 created and 4 conflicts", codes)
	}
	for _, n := range mustNodes(t, c.Client(c.Members[0])) {
		if n.AvailableCPU < 0 || n.AvailableCPU != 0 {
			t.Fatalf("node %s: %d CPUs free, want 0", n.Name, n.AvailableCPU)
		}
	}
}

func TestVM_reconciler_recreates_vanished_domain(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "phoenix", CPU: kit.Intp(1)})
	if err != nil {
		t.Fatal(err)
	}
	host := memberNamed(c, vm.Node)
	dom := hypervisor.DomainName(host.Name, kit.NS, "phoenix")
	host.Fake.Vanish(dom)
	c.WaitFor("the domain recreated and reported", 10*time.Second, func() error {
		if _, ok := host.Fake.Spec(dom); !ok {
			return fmt.Errorf("domain still missing")
		}
		got, err := cl.GetVM(kit.Ctx(t), kit.NS, "phoenix")
		if err != nil || got.Status != api.StatusRunning || !strings.Contains(got.ErrorMessage, "recreated") {
			return fmt.Errorf("vm %+v %v", got, err)
		}
		return nil
	})
	// A domain nobody wants is removed.
	stray := hypervisor.DomainName(host.Name, kit.NS, "stray")
	if err := host.Fake.Create(kit.Ctx(t), hypervisor.Spec{Name: stray, CPU: 1, MemoryMiB: 64}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the stray domain removed", 10*time.Second, func() error {
		if _, ok := host.Fake.Spec(stray); ok {
			return fmt.Errorf("still there")
		}
		return nil
	})
}

func TestVM_hypervisor_down_means_not_ready(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	leader := c.WaitLeader()
	cl := c.Client(leader)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	sick := c.Followers()[0]
	sick.Fake.SetDown(true)
	c.WaitFor(sick.Name+" NOT READY", 10*time.Second, func() error {
		if p := testcluster.NodePhase(leader, sick.Name); p != api.PhaseNotReady {
			return fmt.Errorf("phase %q", p)
		}
		return nil
	})
	// The node record a user reads says why.
	var reason string
	for _, n := range mustNodes(t, cl) {
		if n.Name == sick.Name {
			reason = n.PhaseReason
		}
	}
	if !strings.Contains(reason, "hypervisor") {
		t.Fatalf("the node list's phaseReason %q", reason)
	}
	_, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Node: sick.Name, CPU: kit.Intp(1)})
	if api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), sick.Name+": NOT READY") {
		t.Fatalf("deploy onto a sick node: %v", err)
	}
	// The API still answers on the sick peer.
	if _, err := c.Client(sick).ListNodes(kit.Ctx(t), kit.NS, false); err != nil {
		t.Fatal(err)
	}
	sick.Fake.SetDown(false)
	c.WaitFor(sick.Name+" READY", 10*time.Second, func() error {
		if p := testcluster.NodePhase(leader, sick.Name); p != api.PhaseReady {
			return fmt.Errorf("phase %q", p)
		}
		return nil
	})
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Node: sick.Name, CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
}

func TestVM_image_streamed_to_the_peer_that_lacks_it(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	a, b := c.Members[0], c.Members[1]
	img := kit.Upload(t, c.Client(a), "tiny", kit.TinyImage(t))
	if b.Peer.Images().Has(img.Digest) {
		t.Fatal("b has the blob before it needs it")
	}
	if _, err := c.Client(a).DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Node: b.Name, CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
	if !b.Peer.Images().Has(img.Digest) {
		t.Fatal("b runs the VM without the blob")
	}
	c.WaitFor("b recorded as a holder", 10*time.Second, func() error {
		blob, _ := a.Peer.FSM().Blob(img.Digest)
		if !slices.Contains(blob.Holders, b.Name) {
			return fmt.Errorf("holders %v", blob.Holders)
		}
		return nil
	})
}

func TestVMConfig_create_deploy_override_delete(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Followers()[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	cfg, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "small", Image: "tiny", CPU: 1, Memory: 1, CustomMetadata: map[string]string{"from": "config"}})
	if err != nil || cfg.CreatedAt == nil || cfg.CPU != 1 {
		t.Fatalf("create %+v %v", cfg, err)
	}
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, cfg); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("duplicate: %v", err)
	}
	for _, bad := range []api.VMConfig{{Name: "x"}, {Name: "Bad", Image: "tiny"}, {Name: "y", Image: "tiny", CPU: -1}, {Name: "z", Image: "nope"}} {
		if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, bad); err == nil {
			t.Fatalf("accepted %+v", bad)
		}
	}
	if list, err := cl.ListVMConfigs(kit.Ctx(t), kit.NS); err != nil || len(list) != 1 {
		t.Fatalf("list %v %v", list, err)
	}
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{VMConfig: "small", CPU: kit.Intp(2), Name: "from-config"})
	if err != nil {
		t.Fatal(err)
	}
	if vm.CPU != 2 || vm.Memory != "1Gi" || vm.VMConfig != "small" || vm.Image != "tiny" || vm.CustomMetadata["from"] != "config" {
		t.Fatalf("vm %+v", vm)
	}
	if got, err := cl.GetVMConfig(kit.Ctx(t), kit.NS, "small"); err != nil || got.Name != "small" {
		t.Fatalf("get %+v %v", got, err)
	}
	if err := cl.DeleteVMConfig(kit.Ctx(t), kit.NS, "small"); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.GetVMConfig(kit.Ctx(t), kit.NS, "small"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("get after delete: %v", err)
	}
}

func TestVM_peer_restart_keeps_its_vms(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	m := c.Followers()[0]
	cl := c.Client(c.Members[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "survivor", Node: m.Name, CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
	creates := func() int {
		n := 0
		for _, call := range m.Fake.Calls() {
			if strings.HasPrefix(call, "create ") {
				n++
			}
		}
		return n
	}
	before := creates()
	c.Stop(m)
	c.Restart(m)
	c.WaitFor(m.Name+" READY again", 20*time.Second, func() error {
		if p := testcluster.NodePhase(c.WaitLeader(), m.Name); p != api.PhaseReady {
			return fmt.Errorf("phase %q", p)
		}
		return nil
	})
	// Three reconcile passes later the domain was neither recreated nor touched.
	passes := m.Fake.Lists()
	c.WaitFor("three reconcile passes", 20*time.Second, func() error {
		if m.Fake.Lists() < passes+3 {
			return fmt.Errorf("%d passes", m.Fake.Lists()-passes)
		}
		return nil
	})
	if got := creates(); got != before {
		t.Fatalf("the restarted peer created its domain again (%d creates, %d before)", got, before)
	}
	vm, err := cl.GetVM(kit.Ctx(t), kit.NS, "survivor")
	if err != nil || vm.Status != api.StatusRunning || vm.ErrorMessage != "" {
		t.Fatalf("vm %+v %v", vm, err)
	}
}

// memberNamed returns the cluster member whose peer is called name.
func memberNamed(c *testcluster.Cluster, name string) *testcluster.Member {
	for _, m := range c.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func TestVM_recreate_failure_is_retried_before_failed(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "flaky", CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
	dom := hypervisor.DomainName(m.Name, kit.NS, "flaky")
	// The domain vanishes while the hypervisor briefly refuses to create it:
	// the peer keeps trying and the VM comes back Running.
	m.Fake.SetCreateError(errors.New("libvirtd is restarting"))
	m.Fake.Vanish(dom)
	c.WaitFor("a failed recreation", 10*time.Second, func() error {
		for _, call := range m.Fake.Calls() {
			if call == "create "+dom {
				return nil
			}
		}
		return fmt.Errorf("no attempt yet")
	})
	m.Fake.SetCreateError(nil)
	c.WaitFor("the VM back", 10*time.Second, func() error {
		vm, err := cl.GetVM(kit.Ctx(t), kit.NS, "flaky")
		if err != nil || vm.Status != api.StatusRunning {
			return fmt.Errorf("%+v %v", vm, err)
		}
		if _, ok := m.Fake.Spec(dom); !ok {
			return fmt.Errorf("no domain")
		}
		return nil
	})
	// If it keeps failing, the VM is Failed with the hypervisor's message.
	m.Fake.SetCreateError(errors.New("disk is gone"))
	m.Fake.Vanish(dom)
	c.WaitFor("the VM Failed", 10*time.Second, func() error {
		vm, err := cl.GetVM(kit.Ctx(t), kit.NS, "flaky")
		if err != nil || vm.Status != api.StatusFailed || !strings.Contains(vm.ErrorMessage, "disk is gone") {
			return fmt.Errorf("%+v %v", vm, err)
		}
		return nil
	})
}

// A VM that ran before and is found shut off, but does not start (its disk
// in flux, libvirtd restarting), is tried again on the next passes rather
// than marked Failed at the first refusal.
func TestVM_start_failure_of_a_vm_that_ran_is_retried(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "flaky", CPU: kit.Intp(1)}); err != nil {
		t.Fatal(err)
	}
	dom := hypervisor.DomainName(m.Name, kit.NS, "flaky")
	m.Fake.SetStartError(errors.New("cannot access storage file"))
	m.Fake.PowerOff()
	c.WaitFor("runs that tried to start it and will try again", 10*time.Second, func() error {
		if n := kit.Metric(t, m, `svc_vm_worker_runs_total{result="retry"}`); n < 2 {
			return fmt.Errorf("%v retries", n)
		}
		return nil
	})
	if vm, _ := cl.GetVM(kit.Ctx(t), kit.NS, "flaky"); vm.Status == api.StatusFailed {
		t.Fatalf("Failed at once: %+v", vm)
	}
	m.Fake.SetStartError(nil)
	c.WaitFor("the VM running again", 10*time.Second, func() error {
		vm, err := cl.GetVM(kit.Ctx(t), kit.NS, "flaky")
		if st, _ := m.Fake.State(dom); err != nil || vm.Status != api.StatusRunning || st != hypervisor.StateRunning {
			return fmt.Errorf("%+v %v, domain %s", vm, err, st)
		}
		return nil
	})
}

// Published Orka 3 clients send zero values with a vmConfig for every field
// the user did not give: the config's values must stand.
func TestVM_config_values_survive_a_body_of_zero_values(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "cfg", Image: "tiny", CPU: 2, Memory: 1.5, LegacyIO: true, NetBoost: true}); err != nil {
		t.Fatal(err)
	}
	body := `{"vmConfig":"cfg","name":"orka","memory":0.0,"legacyIO":false,"netBoost":false,"gpuPassthrough":false,"tagRequired":false}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+m.Peer.APIAddr()+"/api/v1/namespaces/"+kit.NS+"/vms", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+cl.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("deploy: %d", resp.StatusCode)
	}
	vm, err := cl.GetVM(kit.Ctx(t), kit.NS, "orka")
	if err != nil || vm.Memory != "1.5Gi" || vm.CPU != 2 || !vm.LegacyIO {
		t.Fatalf("vm %+v %v", vm, err)
	}
	spec, _ := m.Fake.Spec(hypervisor.DomainName(m.Name, kit.NS, "orka"))
	if !spec.LegacyIO || spec.MemoryMiB != 1536 {
		t.Fatalf("domain spec %+v", spec)
	}
}

// Ten concurrent deploys on one peer each reach Running without waiting for
// the others' driver calls: the fake hypervisor lets no Create go on until
// all ten are in progress at once, which only per-VM workers achieve.
func TestVM_ten_deploys_are_created_in_parallel(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 64 << 30}})
	m := c.WaitLeader()
	cl := c.Client(m)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	m.Fake.HoldCreates(10, 20*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: fmt.Sprintf("par-%d", i), CPU: kit.Intp(1), Memory: kit.Floatp(0.25)})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a deploy failed (were the creates run one after another?): %v", err)
		}
	}
}

// A VM config takes what a deploy takes, by the same rules: a metadata key
// deploy refuses is refused by config create too (it was 201, and every
// deploy from it failed); tagRequired without a tag requires nothing, for
// a config and a deploy alike (published clients send it so).
func TestVMConfig_same_rules_as_deploy(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	longKey := map[string]string{strings.Repeat("k", 64): "v"}
	longValue := map[string]string{"k": strings.Repeat("v", 1025)}
	for name, meta := range map[string]map[string]string{"a 64-character key": longKey, "a value over 1024": longValue} {
		_, cerr := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "meta", Image: "tiny", CustomMetadata: meta})
		_, derr := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", CustomMetadata: meta})
		if api.CodeOf(cerr) != http.StatusBadRequest || api.CodeOf(derr) != http.StatusBadRequest ||
			!strings.Contains(cerr.Error(), "customMetadata") || cerr.Error() != derr.Error() {
			t.Errorf("%s: config create %v, deploy %v; want the same 400 for both", name, cerr, derr)
		}
	}
	cfg, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "ticked", Image: "tiny", CPU: 1, TagRequired: true})
	if err != nil || cfg.TagRequired {
		t.Fatalf("a config with tagRequired and no tag: %+v %v", cfg, err)
	}
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{VMConfig: "ticked"}); err != nil {
		t.Fatalf("deploy from it: %v", err)
	}
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", CPU: kit.Intp(1), TagRequired: kit.Boolp(true)}); err != nil {
		t.Fatalf("a deploy with tagRequired and no tag: %v", err)
	}
}
