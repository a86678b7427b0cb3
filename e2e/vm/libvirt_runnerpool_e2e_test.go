package vm

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"net/http"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
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
func newLibvirtPoolRig(t *testing.T, peers int, prefix string, subnet, hostNet int, poll time.Duration) (*kit.PoolRig, *api.Client) {
	image := guest.RequireLibvirt(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &kit.PoolRig{Secret: "hook-secret"}
	r.GitHub = githubapi.Start(t, key, "")
	kit.ServeToGuests(t, r.GitHub, hostNet)

	r.Cluster = testcluster.New(t, peers, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: prefix, Subnet: subnet, Templates: 2,
		Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 8 << 30}, RunnerPollInterval: poll})
	admin := r.Cluster.Client(r.Cluster.WaitLeader())
	kit.Upload(t, admin, "mini-linux", image)
	// Every node that holds the image keeps a template of the warm config.
	if _, err := admin.CacheImage(kit.Ctx(t), kit.NS, "mini-linux", api.ImageCacheRequest{All: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "runner", Image: "mini-linux", CPU: 1, Memory: 0.25, Warm: true}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range r.Cluster.Members {
		names = append(names, m.Name)
	}
	kit.WaitWarmFor(t, r.Cluster, admin, kit.TemplateWait, "runner", names...)
	r.CreatePool(t, admin, "runner", ghRunnerCommand, 4)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// What the runners in the VMs left said.
		cl := r.Cluster.Client(r.Cluster.WaitLeader())
		vms, _ := cl.ListVMs(context.Background(), kit.NS)
		for _, vm := range vms {
			out, err := cl.RunVM(context.Background(), kit.NS, vm.Name, api.RunRequest{Command: []string{"cat", "/var/log/svc-runner.log"}})
			t.Logf("runner log of %s: %s %s %v", vm.Name, out.Stdout, out.Stderr, err)
		}
	})
	return r, admin
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
	if _, err := admin.SetQuota(kit.Ctx(t), kit.NS, api.Quota{CPU: 100, Memory: 100, VMs: 1, Disk: 1000}); err != nil {
		t.Fatal(err)
	}
	m := r.Cluster.WaitLeader()
	body := []byte(`{"action":"queued","workflow_job":{"id":5,"run_id":1,"status":"queued","labels":["self-hosted","svc-linux"]},"repository":{"full_name":"acme/app"}}`)
	bad, badBody := kit.DeliverTo(t, m, "ci", body, githubapi.Sign([]byte("another secret"), body))
	unknown, unknownBody := kit.DeliverTo(t, m, "no-such-pool", body, githubapi.Sign([]byte(r.Secret), body))
	if bad != http.StatusUnauthorized || unknown != bad || unknownBody != badBody {
		t.Fatalf("a delivery signed with another secret: %d %s; to an unknown pool: %d %s; want the same 401", bad, badBody, unknown, unknownBody)
	}
	r.WatchPeak(t)
	start := time.Now()
	const n = 6
	queued := make([]githubapi.QueuedJob, n)
	for i := range queued {
		queued[i] = githubapi.QueuedJob{Labels: []string{"self-hosted", "svc-linux"}}
	}
	queued[3].Lost = true // its run is in progress long before its turn
	jobs := r.GitHub.QueueRun(context.Background(), "acme/app", queued...)
	lost := jobs[3]
	r.WaitDone(t, admin, n, jobsWait(n, 1))
	if peak := r.StopPeak(); peak != 1 {
		t.Errorf("%d VMs at once under a quota of 1", peak)
	}
	r.CheckRealRun(t, admin, n)
	// Runners made, not requests: a request GitHub refused made none.
	if jit := len(r.GitHub.Registered()); jit != n || r.GitHub.MostWritesInAMinute() >= 80 {
		t.Errorf("%d JIT configurations for %d jobs, at most %d content-creating calls a minute", jit, n, r.GitHub.MostWritesInAMinute())
	}
	recs, err := admin.ListRunnerJobs(kit.Ctx(t), kit.NS, "ci")
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
	for _, d := range r.GitHub.Deliveries() {
		if d.JobID == lost.ID && d.Action == "queued" {
			t.Errorf("the lost job's queued event was delivered: %+v", d)
		}
	}
	if !found {
		t.Errorf("the job whose delivery was lost is not done, found by polling: %+v", recs)
	}
	p, _ := admin.GetRunnerPool(kit.Ctx(t), kit.NS, "ci")
	t.Logf("%d jobs on real VMs under a quota of 1: %v; at most %d content-creating calls a minute; queued to runner started p50 %.2fs p95 %.2fs",
		n, time.Since(start).Round(time.Second), r.GitHub.MostWritesInAMinute(), p.Status.StartP50, p.Status.StartP95)
}

// On real VMs, 3 peers: the leader is killed while jobs run. No job runs
// twice, every job completes, no VM is left once the killed peer is back
// (it removes the domains it no longer has).
func TestLibvirtRunnerPool_leader_killed_mid_run(t *testing.T) {
	r, admin := newLibvirtPoolRig(t, 3, "ghkill", 10, 10, 2*time.Second)
	admin, old := r.KillLeaderWhileRunning(t, admin, 8, kit.RunnerJobWait)
	r.WaitDone(t, admin, 8, jobsWait(8, 4)) // the pool's max
	r.Cluster.Restart(old)
	r.Cluster.WaitCaughtUp(old)
	r.CheckRealRun(t, admin, 8)
}
