package peer_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/runnerpool"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/browser"
	"github.com/svc-project/svc/testkit/githubapi"
	"github.com/svc-project/svc/testkit/testcluster"
)

// poolRig is a cluster of fake VMs whose image has a runner that talks to
// the GitHub stand-in: started with a JIT configuration it takes a job,
// works a moment and completes it, as GitHub's ephemeral runner does.
type poolRig struct {
	c       *testcluster.Cluster
	gh      *githubapi.Server
	secret  string
	runs    sync.Map     // job id -> *atomic.Int32: runner starts
	exited  sync.Map     // VM -> its runner's exit status
	crashes atomic.Int32 // runners to end at once, without a job
	idles   atomic.Int32 // runners that start and never take a job
	// lateFails is how many starts are told failed after their runner took
	// its job (the agent's answer lost); such a runner dies with its VM.
	lateFails atomic.Int32
	work      time.Duration
	maxMu     sync.Mutex
	maxVMs    int
	stopPeak  func() int // stops the watch and returns the peak
}

func newPoolRig(t *testing.T, peers int, poll time.Duration) *poolRig {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &poolRig{secret: "hook-secret", work: 300 * time.Millisecond}
	r.gh = githubapi.Start(t, key, "")
	r.c = testcluster.New(t, peers, testcluster.Options{GuestAgent: true, RunnerPollInterval: poll, GuestPrograms: r.program})
	return r
}

// program is the image's runner: "sh -c 'nohup ...' svc-runner CMD".
func (r *poolRig) program(ctx context.Context, vm string, argv []string, _ []byte) ([]byte, int, bool) {
	if len(argv) == 2 && argv[0] == "cat" && argv[1] == runnerpool.RunnerExit {
		if st, ok := r.exited.Load(vm); ok {
			return []byte(st.(string) + "\n"), 0, true
		}
		return []byte("cat: can't open '" + argv[1] + "': No such file or directory\n"), 1, true
	}
	if len(argv) != 5 || argv[0] != "sh" || argv[3] != "svc-runner" {
		return nil, 0, false
	}
	cmd := strings.Fields(argv[4])
	if len(cmd) != 3 || cmd[1] != "--jitconfig" {
		return []byte("bad runner command\n"), 2, true
	}
	if r.crashes.Add(-1) >= 0 {
		r.exited.Store(vm, "1") // the runner fails at once
		return nil, 0, true
	}
	if r.idles.Add(-1) >= 0 {
		return nil, 0, true // started, and never asks for a job
	}
	if r.lateFails.Add(-1) >= 0 {
		return r.lateFail(vm, cmd[2])
	}
	go func() {
		defer r.exited.Store(vm, "0")
		// As GitHub's runner: wait for a job until one comes, or the runner
		// is removed.
		bg := context.Background()
		var job *githubapi.Job
		for deadline := time.Now().Add(2 * time.Minute); job == nil; {
			var err error
			if job, err = r.gh.Start(bg, cmd[2]); err != nil || time.Now().After(deadline) {
				return
			}
			if job == nil {
				time.Sleep(50 * time.Millisecond) // the runner's long poll
			}
		}
		n, _ := r.runs.LoadOrStore(job.ID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		time.Sleep(r.work) // the job's steps
		_ = r.gh.Complete(bg, job.ID, "success")
	}()
	return nil, 0, true
}

// lateFail takes a job for the runner of vm with its in_progress event
// lost, and tells the start it failed. The runner then works only if its
// VM lives on and its job is recorded running; it dies with its VM.
func (r *poolRig) lateFail(domain, jit string) ([]byte, int, bool) {
	vm := domain[strings.LastIndex(domain, ".")+1:] // svc.PEER.NAMESPACE.VM
	r.gh.LoseDeliveries("in_progress", 1)
	job, err := r.gh.Start(context.Background(), jit)
	if err != nil || job == nil {
		return []byte(fmt.Sprintf("no job for the runner: %v\n", err)), 2, true
	}
	go func() {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			fsm := r.c.Running()[0].Peer.FSM()
			if _, ok := fsm.VM(ns, vm); !ok {
				return // killed with its VM: the job never completes
			}
			for _, j := range fsm.RunnerJobs(ns, "ci") {
				if j.VM == vm && j.State == raftfsm.RunnerJobRunning {
					n, _ := r.runs.LoadOrStore(job.ID, new(atomic.Int32))
					n.(*atomic.Int32).Add(1)
					_ = r.gh.Complete(context.Background(), job.ID, "success")
					r.exited.Store(domain, "0")
					return
				}
			}
		}
	}()
	return []byte("the agent's answer was lost\n"), 1, true
}

// watchPeak records the most VMs of the pool that ever existed at once.
func (r *poolRig) watchPeak(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	r.stopPeak = func() int {
		cancel()
		<-stopped
		r.maxMu.Lock()
		defer r.maxMu.Unlock()
		return r.maxVMs
	}
	t.Cleanup(func() { r.stopPeak() })
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			for _, m := range r.c.Running() {
				n := 0
				for _, vm := range m.Peer.FSM().VMs(ns) {
					if vm.CustomMetadata[runnerpool.MetaPool] == "ci" {
						n++
					}
				}
				r.maxMu.Lock()
				r.maxVMs = max(r.maxVMs, n)
				r.maxMu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
}

func (r *poolRig) setUp(t *testing.T, max int) *api.Client {
	leader := r.c.WaitLeader()
	admin := r.c.Client(leader)
	upload(t, admin, "tiny", tinyImage(t))
	// On every node, so that losing one leaves the others able to run VMs.
	if _, err := admin.CacheImage(ctx(t), ns, "tiny", api.ImageCacheRequest{All: true}); err != nil {
		t.Fatal(err)
	}
	r.c.WaitFor("the image on every node", 30*time.Second, func() error {
		c, err := admin.ImageCache(ctx(t), ns, "tiny")
		if err != nil || len(c.Nodes) != len(r.c.Members) {
			return fmt.Errorf("on %v (%v)", c.Nodes, err)
		}
		return nil
	})
	if _, err := admin.CreateVMConfig(ctx(t), ns, api.VMConfig{Name: "runner", Image: "tiny", CPU: 1, Memory: 0.25}); err != nil {
		t.Fatal(err)
	}
	r.createPool(t, admin, "runner", "runner --jitconfig {jitconfig}", max)
	return admin
}

// createPool makes pool "ci" of the VM config, its webhook delivered to a
// follower.
func (r *poolRig) createPool(t *testing.T, admin *api.Client, vmconfig, command string, max int) {
	t.Helper()
	leader := r.c.WaitLeader()
	pool, err := admin.CreateRunnerPool(ctx(t), ns, api.RunnerPoolRequest{Name: "ci", VMConfig: vmconfig, Labels: []string{"svc-linux"}, Max: max,
		RunnerCommand: command, JobTimeout: "30m",
		GitHub: api.RunnerPoolGitHubRequest{URL: "https://github.com/acme/app", APIBase: r.gh.URL, Token: r.gh.Token, WebhookSecret: r.secret}})
	if err != nil {
		t.Fatal(err)
	}
	if pool.GitHub.TokenSet != true || strings.Contains(fmt.Sprint(pool), r.gh.Token) {
		t.Fatalf("pool %+v", pool)
	}
	// GitHub delivers to every peer's address alike; this one to a follower.
	to := leader
	if f := r.c.Followers(); len(f) > 0 {
		to = f[0]
	}
	r.gh.Hook("http://"+to.Peer.APIAddr()+pool.WebhookPath, []byte(r.secret))
}

// waitDone waits until every job of the stand-in completed and the pool has
// no VM left.
func (r *poolRig) waitDone(t *testing.T, admin *api.Client, jobs int, timeout time.Duration) {
	r.c.WaitFor("every job done and every VM gone", timeout, func() error {
		done := 0
		for _, j := range r.gh.Jobs() {
			if j.Status == "completed" {
				done++
			}
		}
		p, err := admin.GetRunnerPool(context.Background(), ns, "ci")
		if err != nil {
			return err
		}
		if done != jobs || p.Status.VMs != 0 || p.Status.Done != jobs {
			var b strings.Builder
			for _, j := range r.gh.Jobs() {
				fmt.Fprintf(&b, "\n  github job %d %s on %q", j.ID, j.Status, j.RunnerName)
			}
			recs, _ := admin.ListRunnerJobs(context.Background(), ns, "ci")
			for _, j := range recs {
				fmt.Fprintf(&b, "\n  record %d %s vm %q: %s", j.ID, j.State, j.VM, j.Message)
			}
			return fmt.Errorf("%d of %d jobs completed; pool %+v%s", done, jobs, p.Status, b.String())
		}
		return nil
	})
}

func (r *poolRig) checkOnce(t *testing.T) {
	t.Helper()
	r.runs.Range(func(k, v any) bool {
		if n := v.(*atomic.Int32).Load(); n != 1 {
			t.Errorf("job %v ran %d times", k, n)
		}
		return true
	})
}

func TestRunnerPool_twenty_jobs_max_four(t *testing.T) {
	r := newPoolRig(t, 2, time.Hour) // no sweep: every job by webhook
	admin := r.setUp(t, 4)
	r.watchPeak(t)
	labels := make([][]string, 20)
	for i := range labels {
		labels[i] = []string{"self-hosted", "svc-linux"}
	}
	r.gh.Queue(context.Background(), "acme/app", false, labels...)
	r.waitDone(t, admin, 20, 2*time.Minute)
	peak := r.stopPeak()
	r.checkOnce(t)
	if peak > 4 || peak < 2 {
		t.Fatalf("at most %d VMs at once, want 2 to 4", peak)
	}
	p, _ := admin.GetRunnerPool(ctx(t), ns, "ci")
	if p.Status.StartP50 <= 0 || p.Status.StartP95 < p.Status.StartP50 {
		t.Fatalf("status %+v", p.Status)
	}
	if len(r.gh.Runners()) != 0 {
		t.Fatalf("runners left registered: %+v", r.gh.Runners())
	}
	t.Logf("20 jobs, max 4: peak %d VMs; queued to runner started p50 %.2fs p95 %.2fs", peak, p.Status.StartP50, p.Status.StartP95)
}

func TestRunnerPool_lost_webhook_found_by_polling(t *testing.T) {
	r := newPoolRig(t, 1, 500*time.Millisecond)
	admin := r.setUp(t, 2)
	// A job whose delivery is lost, and one of labels the pool lacks.
	r.gh.Queue(context.Background(), "acme/app", true, []string{"self-hosted", "svc-linux"})
	other := r.gh.Queue(context.Background(), "acme/app", true, []string{"self-hosted", "svc-macos"})
	r.c.WaitFor("the lost job done", time.Minute, func() error {
		for _, j := range r.gh.Jobs() {
			if j.ID != other[0].ID && j.Status != "completed" {
				return fmt.Errorf("job %d %s", j.ID, j.Status)
			}
		}
		return nil
	})
	// The pool took it by its sweep, once, and is done with it.
	r.c.WaitFor("the pool done with the job", 30*time.Second, func() error {
		jobs, err := admin.ListRunnerJobs(ctx(t), ns, "ci")
		if err != nil || len(jobs) != 1 || !strings.Contains(jobs[0].Message, "polling") || jobs[0].State != raftfsm.RunnerJobDone {
			return fmt.Errorf("jobs %+v %v", jobs, err)
		}
		return nil
	})
	if r.gh.Jobs()[other[0].ID].Status != "queued" {
		t.Fatal("the pool took a job of labels it lacks")
	}
}

// A runner of a job's attempt left registered by a start whose leader
// died before it recorded the runner's id (emulated here: the runner is
// registered under the first attempt's name before the pool takes the job,
// which GitHub then refuses, 409) is removed by the next attempt; the job
// runs, and no runner is left. Before, nothing removed it (GitHub keeps an
// offline runner for a day): TestLibvirtRunnerPool_leader_killed_mid_run
// once ended with a runner left registered.
func TestRunnerPool_an_earlier_attempts_runner_is_removed(t *testing.T) {
	r := newPoolRig(t, 1, time.Second)
	admin := r.setUp(t, 1)
	jobs := r.gh.Queue(context.Background(), "acme/app", true, []string{"self-hosted", "svc-linux"}) // found by polling
	stale := r.gh.RegisterRunner("acme/app", runnerpool.VMName("ci", jobs[0].ID, 1), []string{"svc-linux"})
	r.waitDone(t, admin, 1, 2*time.Minute)
	r.checkOnce(t)
	if left := r.gh.Runners(); len(left) != 0 {
		t.Fatalf("runners left registered: %+v (the earlier attempt's: %+v)", left, stale)
	}
	if ran := r.gh.Jobs()[jobs[0].ID].RunnerName; ran != runnerpool.VMName("ci", jobs[0].ID, 2) {
		t.Fatalf("the job ran on %q, want its second attempt's runner", ran)
	}
}

func TestRunnerPool_leader_killed_mid_run(t *testing.T) {
	r := newPoolRig(t, 3, time.Second)
	r.work = 2 * time.Second
	admin, _ := r.killLeaderWhileRunning(t, r.setUp(t, 3), 6, time.Minute)
	r.waitDone(t, admin, 6, 2*time.Minute)
	r.checkOnce(t)
}

// killLeaderWhileRunning queues n jobs, kills the leader once one runs
// (waiting at most wait), and returns an admin client of the new leader
// and the killed member. GitHub then delivers to the new leader (the
// webhook's peer may be the one that died: the sweep finds what it missed).
func (r *poolRig) killLeaderWhileRunning(t *testing.T, admin *api.Client, n int, wait time.Duration) (*api.Client, *testcluster.Member) {
	t.Helper()
	labels := make([][]string, n)
	for i := range labels {
		labels[i] = []string{"svc-linux"}
	}
	r.gh.Queue(context.Background(), "acme/app", false, labels...)
	r.c.WaitFor("jobs running", wait, func() error {
		p, err := admin.GetRunnerPool(context.Background(), ns, "ci")
		if err != nil || p.Status.Running == 0 {
			return fmt.Errorf("%+v %v", p.Status, err)
		}
		return nil
	})
	old := r.c.WaitLeader()
	r.c.Crash(old)
	nl := r.c.WaitLeader()
	r.gh.Hook("http://"+nl.Peer.APIAddr()+"/api/v1/namespaces/"+ns+"/runnerpools/ci/webhook", []byte(r.secret))
	return r.c.Client(nl), old
}

// A runner that ends before it takes a job (a bad image, a crash): the
// sweep finds its exit status, the job is queued again for a new VM, and
// the spent VM goes.
func TestRunnerPool_runner_ended_without_a_job(t *testing.T) {
	r := newPoolRig(t, 1, 300*time.Millisecond)
	r.crashes.Store(1)
	admin := r.setUp(t, 2)
	r.oneJobDoneOn(t, admin, 2)
}

// A running job whose VM is gone before its runner took the job (deleted
// through another job's record after GitHub swapped their runners, or by
// hand): the sweep finds the VM gone, the job is queued again for a new
// VM and runs there, once. (Before, the sweep only asked the VM, and the
// job stayed running for ever: seen in the real-VM test of 20 jobs.)
func TestRunnerPool_running_job_whose_VM_is_gone(t *testing.T) {
	r := newPoolRig(t, 1, 300*time.Millisecond)
	r.idles.Store(1)
	admin := r.setUp(t, 2)
	jobs := r.gh.Queue(context.Background(), "acme/app", false, []string{"svc-linux"})
	first := runnerpool.VMName("ci", jobs[0].ID, 1)
	r.c.WaitFor("the job running on its first VM", time.Minute, func() error {
		recs, err := admin.ListRunnerJobs(ctx(t), ns, "ci")
		if err != nil {
			return err
		}
		if len(recs) != 1 || recs[0].State != raftfsm.RunnerJobRunning || recs[0].VM != first {
			return fmt.Errorf("records %+v", recs)
		}
		return nil
	})
	if err := admin.DeleteVM(ctx(t), ns, first); err != nil {
		t.Fatal(err)
	}
	r.waitDone(t, admin, 1, time.Minute)
	r.checkOnce(t)
	recs, err := admin.ListRunnerJobs(ctx(t), ns, "ci")
	if err != nil || len(recs) != 1 || recs[0].Attempts != 2 || recs[0].VM != runnerpool.VMName("ci", jobs[0].ID, 2) {
		t.Fatalf("records %+v %v: want the job done on the VM of its second attempt", recs, err)
	}
}

// oneJobDoneOn queues one job and checks that it ran once, on the VM of
// the pool's attempt-th claim of it, and is done.
func (r *poolRig) oneJobDoneOn(t *testing.T, admin *api.Client, attempt int) {
	t.Helper()
	jobs := r.gh.Queue(context.Background(), "acme/app", false, []string{"svc-linux"})
	r.waitDone(t, admin, 1, time.Minute)
	r.checkOnce(t)
	recs, err := admin.ListRunnerJobs(ctx(t), ns, "ci")
	if err != nil || len(recs) != 1 || recs[0].Attempts != attempt || recs[0].VM != runnerpool.VMName("ci", jobs[0].ID, attempt) {
		t.Fatalf("records %+v %v: want the job done on the VM of attempt %d", recs, err, attempt)
	}
	if got := r.gh.Jobs()[jobs[0].ID].RunnerName; got != recs[0].VM {
		t.Fatalf("the job ran on %q, its record names %s", got, recs[0].VM)
	}
}

// A start told failed after its runner took a job (the agent's answer
// lost, and GitHub's in_progress event too): the runner is removed before
// its VM goes, GitHub refuses since it runs a job, and so the VM stays and
// the job runs to its end there, once.
func TestRunnerPool_start_failed_after_the_runner_took_its_job(t *testing.T) {
	r := newPoolRig(t, 1, time.Hour) // no sweep: nothing but the start's own undo
	r.lateFails.Store(1)
	r.oneJobDoneOn(t, r.setUp(t, 1), 1)
}

func TestRunnerPool_wrong_signature_refused(t *testing.T) {
	r := newPoolRig(t, 1, time.Hour)
	r.setUp(t, 1)
	m := r.c.WaitLeader()
	body := []byte(`{"action":"queued","workflow_job":{"id":5,"run_id":1,"status":"queued","labels":["svc-linux"]},"repository":{"full_name":"acme/app"}}`)
	for _, tc := range []struct {
		name, sig string
		code      int
	}{
		{"another secret", githubapi.Sign([]byte("nope"), body), http.StatusUnauthorized},
		{"no signature", "", http.StatusUnauthorized},
		{"the pool's secret, as SHA-1", githubapi.SignSHA1([]byte(r.secret), body), http.StatusUnauthorized},
		{"signed", githubapi.Sign([]byte(r.secret), body), http.StatusOK},
	} {
		if code := deliver(t, m, body, tc.sig); code != tc.code {
			t.Fatalf("%s: %d, want %d", tc.name, code, tc.code)
		}
		if _, ok := m.Peer.FSM().RunnerJob(ns, "ci", 5); ok != (tc.code == http.StatusOK) {
			t.Fatalf("%s: job recorded %v", tc.name, ok)
		}
	}
	// A pool that does not exist is answered as a bad signature is: the
	// webhook tells no one which pools there are.
	answer := func(pool, sig string) string {
		code, b := deliverTo(t, m, pool, body, sig)
		return fmt.Sprint(code, " ", strings.TrimSpace(b))
	}
	bad, unknown := answer("ci", githubapi.Sign([]byte("nope"), body)), answer("no-such-pool", githubapi.Sign([]byte(r.secret), body))
	if bad != unknown || !strings.HasPrefix(bad, "401 ") {
		t.Fatalf("a bad signature: %s\nan unknown pool: %s\nwant the same 401", bad, unknown)
	}
}

// The web UI's runner pool view, in headless Chromium, once the pool ran
// its jobs: its VMs, done jobs and start times as the API reports them.
func TestWebUI_runner_pools_view(t *testing.T) {
	r := newPoolRig(t, 1, time.Hour)
	admin := r.setUp(t, 2)
	r.gh.Queue(context.Background(), "acme/app", false, []string{"svc-linux"}, []string{"svc-linux"}, []string{"svc-linux"})
	r.waitDone(t, admin, 3, time.Minute)
	// The browser's deadline starts once the pool is done: on a busy
	// machine the jobs alone have taken most of two minutes.
	bctx := browser.New(t, 2*time.Minute)
	m := r.c.WaitLeader()
	browser.Step(t, bctx, "the sign-in page", chromedp.Navigate("http://"+m.Peer.APIAddr()+"/ui/"), chromedp.WaitVisible("#signin-form"))
	browser.Step(t, bctx, "sign in", browser.Paste("#token", r.c.Token("admin", true)), chromedp.Click("#signin-form button"), chromedp.WaitVisible("#app"))
	browser.Step(t, bctx, "the runner pools view", uiView("runnerpools"), chromedp.WaitVisible(`tr[data-pool="ci"]`))
	waitJS(t, r.c, bctx, "the pool's row", `document.querySelector('tr[data-pool="ci"]').textContent.includes("0 / 2") && document.querySelector('tr[data-pool="ci"]').children[6].textContent === "3"`, 10*time.Second)
	browser.Screenshot(t, bctx, "webui-runnerpools")
}

// deliver posts a workflow_job delivery with signature sig to pool ci's
// webhook at m, and returns the status code.
func deliver(t *testing.T, m *testcluster.Member, body []byte, sig string) int {
	t.Helper()
	code, _ := deliverTo(t, m, "ci", body, sig)
	return code
}

// deliverTo posts a workflow_job delivery to pool's webhook, and returns
// the status code and the answer's body.
func deliverTo(t *testing.T, m *testcluster.Member, pool string, body []byte, sig string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+m.Peer.APIAddr()+"/api/v1/namespaces/"+ns+"/runnerpools/"+pool+"/webhook", bytes.NewReader(body))
	req.Header.Set("X-GitHub-Event", "workflow_job")
	req.Header.Set("X-Hub-Signature-256", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A namespace quota of one VM under a pool of max 3: one job's VM at a
// time, the others wait saying why (in the pool's status), and every job
// is done in the end, none failed.
func TestRunnerPool_jobs_wait_for_the_quota(t *testing.T) {
	r := newPoolRig(t, 1, time.Hour)
	r.work = time.Second
	admin := r.setUp(t, 3)
	if _, err := admin.SetQuota(ctx(t), ns, api.Quota{CPU: 100, Memory: 100, VMs: 1, Disk: 1000}); err != nil {
		t.Fatal(err)
	}
	r.watchPeak(t)
	r.gh.Queue(context.Background(), "acme/app", false, []string{"svc-linux"}, []string{"svc-linux"}, []string{"svc-linux"})
	r.c.WaitFor("a job waiting for the quota, said in the pool's status", time.Minute, func() error {
		p, err := admin.GetRunnerPool(ctx(t), ns, "ci")
		if err != nil || !strings.Contains(p.Status.Waiting, "quota") {
			return fmt.Errorf("status %+v %v", p.Status, err)
		}
		return nil
	})
	r.waitDone(t, admin, 3, 2*time.Minute)
	if peak := r.stopPeak(); peak != 1 {
		t.Fatalf("%d VMs at once under a quota of 1", peak)
	}
	r.checkOnce(t)
}
