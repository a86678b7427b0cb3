package node_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/githubapi"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// ghRunnerCommand starts mini-linux's runner stand-in with the job's JIT
// configuration: it takes the job GitHub's stand-in gives it, works for a
// second and reports it complete.
const ghRunnerCommand = "/usr/lib/svc/ghrunner --work 1s --jitconfig {jitconfig}"

// newLibvirtPoolRig is a cluster of real VMs from a warm config of
// mini-linux, and GitHub's stand-in, reached by the guests' runners at an
// address of the host (hostNet tells the tests' addresses apart).
func newLibvirtPoolRig(t *testing.T, peers int, prefix string, subnet, hostNet int, poll time.Duration) (*poolRig, *api.Client) {
	image := guest.RequireLibvirt(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &poolRig{secret: "hook-secret"}
	r.gh = githubapi.Start(t, key, "")
	serveToGuests(t, r.gh, hostNet)

	r.c = testcluster.New(t, peers, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: prefix, Subnet: subnet, Templates: 2,
		Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 8 << 30}, RunnerPollInterval: poll})
	admin := r.c.Client(r.c.WaitLeader())
	upload(t, admin, "mini-linux", image)
	// Every node that holds the image keeps a template of the warm config.
	if _, err := admin.CacheImage(ctx(t), ns, "mini-linux", api.ImageCacheRequest{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateVMConfig(ctx(t), ns, api.VMConfig{Name: "runner", Image: "mini-linux", CPU: 1, Memory: 0.25, Warm: true}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range r.c.Members {
		names = append(names, m.Name)
	}
	waitWarmFor(t, r.c, admin, 5*time.Minute, "runner", names...)
	r.createPool(t, admin, "runner", ghRunnerCommand, 4)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// What the runners in the VMs left said.
		cl := r.c.Client(r.c.WaitLeader())
		vms, _ := cl.ListVMs(context.Background(), ns)
		for _, vm := range vms {
			out, err := cl.RunVM(context.Background(), ns, vm.Name, api.RunRequest{Command: []string{"cat", "/var/log/svc-runner.log"}})
			t.Logf("runner log of %s: %s %s %v", vm.Name, out.Stdout, out.Stderr, err)
		}
	})
	return r, admin
}

// serveToGuests serves GitHub's stand-in also at a host address the
// guests reach (hostNet tells the tests' addresses apart), where the
// runners in them are sent.
func serveToGuests(tb testing.TB, gh *githubapi.Server, hostNet int) {
	tb.Helper()
	l, err := net.Listen("tcp", guest.HostAddr(tb, hostNet)+":0")
	if err != nil {
		tb.Fatal(err)
	}
	srv := &http.Server{Handler: gh.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	tb.Cleanup(func() { _ = srv.Close() })
	gh.SetRunnerURL("http://" + l.Addr().String())
}

// checkRealRun checks what GitHub's stand-in saw: every job completed by
// a runner of its own, in a VM of its own, and no runner left registered;
// and that no VM of the pool is left, in the API or in libvirt.
func (r *poolRig) checkRealRun(t *testing.T, admin *api.Client, jobs int) {
	t.Helper()
	runners := map[string]int64{}
	for id, j := range r.gh.Jobs() {
		if j.Status != "completed" || j.Conclusion != "success" || !strings.HasPrefix(j.RunnerName, "ci-") {
			t.Errorf("job %d: %s %s on %q", id, j.Status, j.Conclusion, j.RunnerName)
		}
		if other, ok := runners[j.RunnerName]; ok {
			t.Errorf("jobs %d and %d ran on one runner %s", id, other, j.RunnerName)
		}
		runners[j.RunnerName] = id
	}
	if len(runners) != jobs {
		t.Errorf("%d runners ran %d jobs", len(runners), jobs)
	}
	if left := r.gh.Runners(); len(left) != 0 {
		t.Errorf("runners left registered: %+v", left)
	}
	vms, err := admin.ListVMs(ctx(t), ns)
	if err != nil || len(vms) != 0 {
		t.Errorf("VMs left: %+v %v", vms, err)
	}
	r.c.WaitFor("no domain of the pool left in libvirt", time.Minute, func() error {
		for _, m := range r.c.Running() {
			doms, err := m.Libvirt.List(ctx(t))
			if err != nil {
				return err
			}
			for _, d := range doms {
				if strings.Contains(d.Name, ".ci-") {
					return fmt.Errorf("%s still has %s", m.Name, d.Name)
				}
			}
		}
		return nil
	})
}

// On real VMs from a warm config, 2 peers: 20 jobs queued at once (one of
// them with its webhook delivery lost, found by polling) with max 4. Never
// more than 4 VMs, every job run once in a VM of its own by the runner
// inside mini-linux, every VM and runner gone; a wrong signature refused.
func TestLibvirtRunnerPool_twenty_jobs_max_four(t *testing.T) {
	r, admin := newLibvirtPoolRig(t, 2, "ghrun", 9, 9, 3*time.Second)
	body := []byte(`{"action":"queued","workflow_job":{"id":5,"run_id":1,"status":"queued","labels":["svc-linux"]},"repository":{"full_name":"acme/app"}}`)
	if code := deliver(t, r.c.WaitLeader(), body, githubapi.Sign([]byte("another secret"), body)); code != http.StatusUnauthorized {
		t.Fatalf("a delivery signed with another secret: %d, want 401", code)
	}
	r.watchPeak(t)
	start := time.Now()
	labels := make([][]string, 19)
	for i := range labels {
		labels[i] = []string{"self-hosted", "svc-linux"}
	}
	r.gh.Queue(context.Background(), "acme/app", false, labels...)
	lost := r.gh.Queue(context.Background(), "acme/app", true, []string{"svc-linux"})
	r.waitDone(t, admin, 20, 8*time.Minute)
	peak := r.stopPeak()
	if peak > 4 || peak < 2 {
		t.Errorf("at most %d VMs at once, want 2 to 4", peak)
	}
	r.checkRealRun(t, admin, 20)
	jobs, err := admin.ListRunnerJobs(ctx(t), ns, "ci")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, j := range jobs {
		if j.ID == 5 {
			t.Errorf("the job of the refused delivery was recorded: %+v", j)
		}
		if j.ID == lost[0].ID {
			found = j.State == raftfsm.RunnerJobDone
		}
	}
	for _, d := range r.gh.Deliveries() {
		if d.JobID == lost[0].ID && d.Action == "queued" {
			t.Errorf("the lost job's queued event was delivered: %+v", d)
		}
	}
	if !found {
		t.Errorf("the job whose delivery was lost is not done (found by polling): %+v", jobs)
	}
	p, _ := admin.GetRunnerPool(ctx(t), ns, "ci")
	t.Logf("20 jobs on real VMs, max 4: %v; peak %d VMs; queued to runner started p50 %.2fs p95 %.2fs",
		time.Since(start).Round(time.Second), peak, p.Status.StartP50, p.Status.StartP95)
}

// On real VMs, 3 peers: the leader is killed while jobs run. No job runs
// twice, every job completes, no VM is left once the killed peer is back
// (it removes the domains it no longer has).
func TestLibvirtRunnerPool_leader_killed_mid_run(t *testing.T) {
	r, admin := newLibvirtPoolRig(t, 3, "ghkill", 10, 10, 2*time.Second)
	admin, old := r.killLeaderWhileRunning(t, admin, 8, 3*time.Minute)
	r.waitDone(t, admin, 8, 8*time.Minute)
	r.c.Restart(old)
	r.c.WaitCaughtUp(old)
	r.checkRealRun(t, admin, 8)
}
