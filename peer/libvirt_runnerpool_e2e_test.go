package peer_test

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
	waitWarmFor(t, r.c, admin, templateWait, "runner", names...)
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
	r.c.WaitFor("no domain of the pool left in libvirt", domainGoneWait, func() error {
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

// On real VMs from a warm config, 2 peers, against GitHub's stand-in as
// GitHub documents itself: 6 jobs of one run written as the docs write
// them (runs-on: [self-hosted, svc-linux]), queued at once under a
// namespace quota of one VM (the pool's max 4), one of them with its
// queued delivery lost while the run is in progress. Every job is run once
// in a VM of its own by the runner inside mini-linux, one JIT
// configuration each, one VM at a time; every VM and runner gone; a wrong
// signature and an unknown pool get the same 401. (Twenty jobs and a first
// minute under GitHub's secondary limit before: 258 s, most of it guests
// booted one after another and a minute of waiting. Six still make a queue
// that waits on each VM's end; twenty under the quota, the refused minute
// and the lost delivery are TestRunnerPool_twenty_jobs_under_a_quota_of_one,
// TestRunnerPool_secondary_limit_for_a_minute and
// TestRunnerPool_lost_delivery_in_a_run_under_way, on the same pool code.)
func TestLibvirtRunnerPool_jobs_under_a_quota_as_GitHub_documents(t *testing.T) {
	r, admin := newLibvirtPoolRig(t, 2, "ghrun", 9, 9, 3*time.Second)
	if _, err := admin.SetQuota(ctx(t), ns, api.Quota{CPU: 100, Memory: 100, VMs: 1, Disk: 1000}); err != nil {
		t.Fatal(err)
	}
	m := r.c.WaitLeader()
	body := []byte(`{"action":"queued","workflow_job":{"id":5,"run_id":1,"status":"queued","labels":["self-hosted","svc-linux"]},"repository":{"full_name":"acme/app"}}`)
	bad, badBody := deliverTo(t, m, "ci", body, githubapi.Sign([]byte("another secret"), body))
	unknown, unknownBody := deliverTo(t, m, "no-such-pool", body, githubapi.Sign([]byte(r.secret), body))
	if bad != http.StatusUnauthorized || unknown != bad || unknownBody != badBody {
		t.Fatalf("a delivery signed with another secret: %d %s; to an unknown pool: %d %s; want the same 401", bad, badBody, unknown, unknownBody)
	}
	r.watchPeak(t)
	start := time.Now()
	const n = 6
	queued := make([]githubapi.QueuedJob, n)
	for i := range queued {
		queued[i] = githubapi.QueuedJob{Labels: []string{"self-hosted", "svc-linux"}}
	}
	queued[3].Lost = true // its run is in progress long before its turn
	jobs := r.gh.QueueRun(context.Background(), "acme/app", queued...)
	lost := jobs[3]
	r.waitDone(t, admin, n, jobsWait(n, 1))
	if peak := r.stopPeak(); peak != 1 {
		t.Errorf("%d VMs at once under a quota of 1", peak)
	}
	r.checkRealRun(t, admin, n)
	// Runners made, not requests: a request GitHub refused made none.
	if jit := len(r.gh.Registered()); jit != n || r.gh.MostWritesInAMinute() >= 80 {
		t.Errorf("%d JIT configurations for %d jobs, at most %d content-creating calls a minute", jit, n, r.gh.MostWritesInAMinute())
	}
	recs, err := admin.ListRunnerJobs(ctx(t), ns, "ci")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, j := range recs {
		if j.ID == 5 {
			t.Errorf("the job of the refused delivery was recorded: %+v", j)
		}
		// No queued delivery was made for it (below): its record is the sweep's.
		found = found || j.ID == lost.ID && j.State == raftfsm.RunnerJobDone
	}
	for _, d := range r.gh.Deliveries() {
		if d.JobID == lost.ID && d.Action == "queued" {
			t.Errorf("the lost job's queued event was delivered: %+v", d)
		}
	}
	if !found {
		t.Errorf("the job whose delivery was lost is not done, found by polling: %+v", recs)
	}
	p, _ := admin.GetRunnerPool(ctx(t), ns, "ci")
	t.Logf("%d jobs on real VMs under a quota of 1: %v; at most %d content-creating calls a minute; queued to runner started p50 %.2fs p95 %.2fs",
		n, time.Since(start).Round(time.Second), r.gh.MostWritesInAMinute(), p.Status.StartP50, p.Status.StartP95)
}

// On real VMs, 3 peers: the leader is killed while jobs run. No job runs
// twice, every job completes, no VM is left once the killed peer is back
// (it removes the domains it no longer has).
func TestLibvirtRunnerPool_leader_killed_mid_run(t *testing.T) {
	r, admin := newLibvirtPoolRig(t, 3, "ghkill", 10, 10, 2*time.Second)
	admin, old := r.killLeaderWhileRunning(t, admin, 8, runnerJobWait)
	r.waitDone(t, admin, 8, jobsWait(8, 4)) // the pool's max
	r.c.Restart(old)
	r.c.WaitCaughtUp(old)
	r.checkRealRun(t, admin, 8)
}
