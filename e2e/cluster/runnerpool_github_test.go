package cluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/node/runnerpool"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/githubapi"
)

// GitHub as it documents itself: a JIT runner has exactly the labels it
// was registered with. The pool registers self-hosted, the guest's OS and
// architecture and its own label, so that jobs written as the docs write
// them (runs-on: [self-hosted, svc-linux], or with linux and x64) are
// served, and a job of another OS is not.
func TestRunnerPool_runs_on_as_the_docs_write_it(t *testing.T) {
	r := kit.NewPoolRig(t, 1, time.Hour)
	admin := r.SetUp(t, 2)
	served := r.GitHub.Queue(context.Background(), "acme/app", false,
		[]string{"self-hosted", "svc-linux"}, []string{"self-hosted", "linux", "x64", "svc-linux"}, []string{"svc-linux"})
	other := r.GitHub.Queue(context.Background(), "acme/app", false, []string{"self-hosted", "macOS", "svc-linux"})
	r.Cluster.WaitFor("the three jobs done", time.Minute, func() error {
		for _, j := range served {
			if got := r.GitHub.Jobs()[j.ID]; got.Status != "completed" {
				return fmt.Errorf("job %d (%v) %s", j.ID, j.Labels, got.Status)
			}
		}
		return nil
	})
	r.CheckOnce(t)
	want := []string{"self-hosted", "Linux", "X64", "svc-linux"}
	for _, rn := range r.GitHub.Registered() {
		if !slices.Equal(rn.Labels, want) {
			t.Fatalf("runner %s registered with %v, want %v", rn.Name, rn.Labels, want)
		}
	}
	if st := r.GitHub.Jobs()[other[0].ID].Status; st != "queued" {
		t.Fatalf("the macOS job is %s", st)
	}
	recs, err := admin.ListRunnerJobs(kit.Ctx(t), kit.NS, "ci")
	if err != nil || len(recs) != 3 {
		t.Fatalf("records %+v %v: want the three jobs only", recs, err)
	}
	// Each job's runner ran it, and GitHub removed it as it removes a JIT
	// runner after its job: the pool asks GitHub to remove none of them
	// (before, each finished job cost a DELETE answered 404).
	r.Cluster.WaitFor("the three jobs' records done", time.Minute, func() error {
		recs, err := admin.ListRunnerJobs(kit.Ctx(t), kit.NS, "ci")
		if err != nil {
			return err
		}
		for _, j := range recs {
			if j.State != "done" {
				return fmt.Errorf("job %d %s", j.ID, j.State)
			}
		}
		return nil
	})
	if n := r.GitHub.GoneRemovals(); n != 0 {
		t.Fatalf("%d DELETEs of runners GitHub had removed after their jobs", n)
	}
}

// Twenty jobs at once under a namespace quota of one VM (the pool's max
// 4): the starts that fail for the quota ask GitHub nothing (the runner is
// registered once its VM runs), and the pool backs off between them. Every
// job runs once, one JIT configuration each, and the content-creating
// calls stay under GitHub's 80 a minute, none refused.
func TestRunnerPool_twenty_jobs_under_a_quota_of_one(t *testing.T) {
	r := kit.NewPoolRig(t, 1, time.Hour)
	r.Work = 100 * time.Millisecond
	admin := r.SetUp(t, 4)
	if _, err := admin.SetQuota(kit.Ctx(t), kit.NS, api.Quota{CPU: 100, Memory: 100, VMs: 1, Disk: 1000}); err != nil {
		t.Fatal(err)
	}
	r.WatchPeak(t)
	labels := make([][]string, 20)
	for i := range labels {
		labels[i] = []string{"self-hosted", "svc-linux"}
	}
	r.GitHub.Queue(context.Background(), "acme/app", false, labels...)
	r.WaitDone(t, admin, 20, 4*time.Minute)
	if peak := r.StopPeak(); peak != 1 {
		t.Fatalf("%d VMs at once under a quota of 1", peak)
	}
	r.CheckOnce(t)
	jit := r.GitHub.Requests("POST /repos/{owner}/{repo}/actions/runners/generate-jitconfig")
	if jit != 20 || r.GitHub.Refusals() != 0 || r.GitHub.MostWritesInAMinute() >= 80 {
		t.Fatalf("%d JIT configurations for 20 jobs, %d refused, %d content-creating calls in a minute at most",
			jit, r.GitHub.Refusals(), r.GitHub.MostWritesInAMinute())
	}
	t.Logf("20 jobs under a quota of 1: %d JIT configurations, at most %d content-creating calls a minute", jit, r.GitHub.MostWritesInAMinute())
}

// A run of two jobs whose second job's queued delivery is lost: once the
// first job runs, the run is in_progress, and the sweep, which lists the
// runs under way too, finds the second one.
func TestRunnerPool_lost_delivery_in_a_run_under_way(t *testing.T) {
	r := kit.NewPoolRig(t, 1, 500*time.Millisecond)
	r.Work = 2 * time.Second
	admin := r.SetUp(t, 1)
	jobs := r.GitHub.QueueRun(context.Background(), "acme/app",
		githubapi.QueuedJob{Labels: []string{"self-hosted", "svc-linux"}},
		githubapi.QueuedJob{Labels: []string{"self-hosted", "svc-linux"}, Lost: true})
	r.WaitDone(t, admin, 2, 2*time.Minute)
	r.CheckOnce(t)
	recs, err := admin.ListRunnerJobs(kit.Ctx(t), kit.NS, "ci")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, j := range recs {
		found = found || j.ID == jobs[1].ID && strings.Contains(j.Message, "polling") && j.State == raftfsm.RunnerJobDone
	}
	if !found {
		t.Fatalf("the job of the lost delivery is not done, found by polling: %+v", recs)
	}
}

// GitHub refuses every request under its secondary limit for a minute,
// with no Retry-After: the pool holds its calls (a refusal or two, then
// none until the minute GitHub asks for has passed), loses nothing, and
// serves every job after, once.
func TestRunnerPool_secondary_limit_for_a_minute(t *testing.T) {
	r := kit.NewPoolRig(t, 1, time.Second)
	admin := r.SetUp(t, 3)
	limited := time.Now()
	r.GitHub.SecondaryLimitFor(time.Minute, false)
	r.GitHub.Queue(context.Background(), "acme/app", false, []string{"self-hosted", "svc-linux"}, []string{"svc-linux"}, []string{"svc-linux"})
	r.WaitDone(t, admin, 3, 3*time.Minute)
	r.CheckOnce(t)
	during := r.GitHub.CallsBetween(limited, limited.Add(time.Minute))
	if during > 4 {
		t.Fatalf("%d calls to GitHub during the minute of its secondary limit", during)
	}
	t.Logf("%d calls during the minute of the limit, %d refused", during, r.GitHub.Refusals())
}

// GitHub unreachable: the jobs' starts fail, and the pool backs off
// between them (before: 2,101 claims in 10 s); nothing is left behind.
func TestRunnerPool_backs_off_while_GitHub_is_unreachable(t *testing.T) {
	r := kit.NewPoolRig(t, 1, time.Hour)
	admin := r.SetUp(t, 4)
	// A second pool whose GitHub is a closed port.
	dead := httpDead(t)
	if _, err := admin.CreateRunnerPool(kit.Ctx(t), kit.NS, api.RunnerPoolRequest{Name: "dead", VMConfig: "runner", Labels: []string{"svc-dead"}, Max: 4,
		RunnerCommand: "runner --jitconfig {jitconfig}", JobTimeout: "30m",
		GitHub: api.RunnerPoolGitHubRequest{URL: "https://github.com/acme/app", APIBase: dead, Token: "t", WebhookSecret: "dead-secret"}}); err != nil {
		t.Fatal(err)
	}
	m := r.Cluster.WaitLeader()
	for i := range 4 {
		body := fmt.Appendf(nil, `{"action":"queued","workflow_job":{"id":%d,"run_id":1,"status":"queued","labels":["self-hosted","svc-dead"]},"repository":{"full_name":"acme/app"}}`, 9000+i)
		if code, _ := kit.DeliverTo(t, m, "dead", body, githubapi.Sign([]byte("dead-secret"), body)); code != http.StatusOK {
			t.Fatalf("delivery: %d", code)
		}
	}
	start := time.Now()
	var attempts int
	r.Cluster.WaitFor("10 s of tries", 30*time.Second, func() error {
		if time.Since(start) < 10*time.Second {
			return fmt.Errorf("%s", time.Since(start))
		}
		return nil
	})
	recs, err := admin.ListRunnerJobs(kit.Ctx(t), kit.NS, "dead")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range recs {
		attempts += j.Attempts
	}
	if attempts == 0 || attempts > 30 {
		t.Fatalf("%d starts of 4 jobs in 10 s with GitHub unreachable, want a few", attempts)
	}
	p, err := admin.GetRunnerPool(kit.Ctx(t), kit.NS, "dead")
	if err != nil || !strings.Contains(p.Status.Waiting, "tries again in") {
		t.Fatalf("pool status %+v %v: want the wait said", p.Status, err)
	}
	t.Logf("%d starts in 10 s with GitHub unreachable: %s", attempts, p.Status.Waiting)
}

// A pool's VMs are the pool's: a member of the namespace sees them but gets
// 403 on run, console, port-forward and delete; an admin does not; and no
// member deploys a VM marked as a pool's.
func TestRunnerPool_VMs_belong_to_the_pool(t *testing.T) {
	r := kit.NewPoolRig(t, 1, time.Hour)
	r.Idles.Store(1) // the runner waits for a job for ever: its VM stays
	admin := r.SetUp(t, 1)
	r.GitHub.Queue(context.Background(), "acme/app", false, []string{"self-hosted", "svc-linux"})
	var vm string
	r.Cluster.WaitFor("the pool's VM running its runner", time.Minute, func() error {
		recs, err := admin.ListRunnerJobs(kit.Ctx(t), kit.NS, "ci")
		if err != nil || len(recs) != 1 || recs[0].State != raftfsm.RunnerJobRunning {
			return fmt.Errorf("records %+v %v", recs, err)
		}
		vm = recs[0].VM
		return nil
	})
	m := r.Cluster.WaitLeader()
	member := api.NewClient("http://"+m.Peer.APIAddr(), r.Cluster.Token("dev", false))
	got, err := member.GetVM(kit.Ctx(t), kit.NS, vm)
	if err != nil || got.VNCPassword != "" {
		t.Fatalf("a member's view of the pool's VM: %+v %v", got, err)
	}
	if _, err := member.RunVM(kit.Ctx(t), kit.NS, vm, api.RunRequest{Command: []string{"cat", runnerpool.RunnerLog}}); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("a member's run: %v, want 403", err)
	}
	for _, path := range []string{"console", "port-forward?port=22"} {
		if code := getCode(t, m.Peer, "/api/v1/namespaces/"+kit.NS+"/vms/"+vm+"/"+path, r.Cluster.Token("dev", false)); code != http.StatusForbidden {
			t.Fatalf("a member's %s: %d, want 403", path, code)
		}
		if code := getCode(t, m.Peer, "/api/v1/namespaces/"+kit.NS+"/vms/"+vm+"/"+path, r.Cluster.Token("admin", true)); code == http.StatusForbidden {
			t.Fatalf("an admin's %s: 403", path)
		}
	}
	if err := member.DeleteVM(kit.Ctx(t), kit.NS, vm); api.CodeOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "runner pool") {
		t.Fatalf("a member's delete: %v, want 403 naming the pool", err)
	}
	if _, err := member.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Name: "fake-runner", VMConfig: "runner", CustomMetadata: map[string]string{runnerpool.MetaPool: "ci"}}); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("a member's deploy marked as the pool's: %v, want 403", err)
	}
	if _, err := admin.RunVM(kit.Ctx(t), kit.NS, vm, api.RunRequest{Command: []string{"cat", runnerpool.RunnerExit}}); err != nil && api.CodeOf(err) == http.StatusForbidden {
		t.Fatalf("an admin's run: %v", err)
	}
	if err := admin.DeleteVM(kit.Ctx(t), kit.NS, vm); err != nil {
		t.Fatalf("an admin's delete: %v", err)
	}
}

// httpDead returns the address of a port nothing listens on any more.
func httpDead(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL + "/"
	srv.Close()
	return u
}

// getCode answers the status of a GET of path at m with token.
func getCode(t *testing.T, m interface{ APIAddr() string }, path, token string) int {
	t.Helper()
	return get(t, "http://"+m.APIAddr()+path, token).StatusCode
}
