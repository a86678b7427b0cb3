package kit

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"crypto/rsa"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/runnerpool"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/githubapi"
	"github.com/svc-project/svc/testkit/testcluster"
)

// PoolRig is a cluster of fake VMs whose image has a runner that talks to
// the GitHub stand-in: started with a JIT configuration it takes a job,
// works a moment and completes it, as GitHub's ephemeral runner does.
type PoolRig struct {
	Cluster *testcluster.Cluster
	GitHub  *githubapi.Server
	Secret  string
	Runs    sync.Map     // job id -> *atomic.Int32: runner starts
	Exited  sync.Map     // VM -> its runner's exit status
	Crashes atomic.Int32 // runners to end at once, without a job
	Idles   atomic.Int32 // runners that start and never take a job
	// LateFails is how many starts are told failed after their runner took
	// its job (the agent's answer lost); such a runner dies with its VM.
	LateFails atomic.Int32
	Work      time.Duration
	MaxMu     sync.Mutex
	MaxVMs    int
	StopPeak  func() int // stops the watch and returns the peak
}

func NewPoolRig(t *testing.T, peers int, poll time.Duration) *PoolRig {
	key, err := rsa.GenerateKey(crand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	r := &PoolRig{Secret: "hook-secret", Work: 300 * time.Millisecond}
	r.GitHub = githubapi.Start(t, key, "")
	r.Cluster = testcluster.New(t, peers, testcluster.Options{GuestAgent: true, RunnerPollInterval: poll, GuestPrograms: r.Program})
	return r
}

// Program is the image's runner: "sh -c 'nohup ...' svc-runner CMD".
func (r *PoolRig) Program(ctx context.Context, vm string, argv []string, _ []byte) ([]byte, int, bool) {
	if len(argv) == 2 && argv[0] == "cat" && argv[1] == runnerpool.RunnerExit {
		if st, ok := r.Exited.Load(vm); ok {
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
	if r.Crashes.Add(-1) >= 0 {
		r.Exited.Store(vm, "1") // the runner fails at once
		return nil, 0, true
	}
	if r.Idles.Add(-1) >= 0 {
		return nil, 0, true // started, and never asks for a job
	}
	if r.LateFails.Add(-1) >= 0 {
		return r.LateFail(vm, cmd[2])
	}
	go func() {
		defer r.Exited.Store(vm, "0")
		// As GitHub's runner: wait for a job until one comes, or the runner
		// is removed.
		bg := context.Background()
		var job *githubapi.Job
		for deadline := time.Now().Add(2 * time.Minute); job == nil; {
			var err error
			if job, err = r.GitHub.Start(bg, cmd[2]); err != nil || time.Now().After(deadline) {
				return
			}
			if job == nil {
				time.Sleep(50 * time.Millisecond) // the runner's long poll
			}
		}
		n, _ := r.Runs.LoadOrStore(job.ID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		time.Sleep(r.Work) // the job's steps
		_ = r.GitHub.Complete(bg, job.ID, "success")
	}()
	return nil, 0, true
}

// LateFail takes a job for the runner of vm with its in_progress event
// lost, and tells the start it failed. The runner then works only if its
// VM lives on and its job is recorded running; it dies with its VM.
func (r *PoolRig) LateFail(domain, jit string) ([]byte, int, bool) {
	vm := domain[strings.LastIndex(domain, ".")+1:] // svc.PEER.NAMESPACE.VM
	r.GitHub.LoseDeliveries("in_progress", 1)
	job, err := r.GitHub.Start(context.Background(), jit)
	if err != nil || job == nil {
		return []byte(fmt.Sprintf("no job for the runner: %v\n", err)), 2, true
	}
	go func() {
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			fsm := r.Cluster.Running()[0].Peer.FSM()
			if _, ok := fsm.VM(NS, vm); !ok {
				return // killed with its VM: the job never completes
			}
			for _, j := range fsm.RunnerJobs(NS, "ci") {
				if j.VM == vm && j.State == raftfsm.RunnerJobRunning {
					n, _ := r.Runs.LoadOrStore(job.ID, new(atomic.Int32))
					n.(*atomic.Int32).Add(1)
					_ = r.GitHub.Complete(context.Background(), job.ID, "success")
					r.Exited.Store(domain, "0")
					return
				}
			}
		}
	}()
	return []byte("the agent's answer was lost\n"), 1, true
}

// WatchPeak records the most VMs of the pool that ever existed at once.
func (r *PoolRig) WatchPeak(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	r.StopPeak = func() int {
		cancel()
		<-stopped
		r.MaxMu.Lock()
		defer r.MaxMu.Unlock()
		return r.MaxVMs
	}
	t.Cleanup(func() { r.StopPeak() })
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			for _, m := range r.Cluster.Running() {
				n := 0
				for _, vm := range m.Peer.FSM().VMs(NS) {
					if vm.CustomMetadata[runnerpool.MetaPool] == "ci" {
						n++
					}
				}
				r.MaxMu.Lock()
				r.MaxVMs = max(r.MaxVMs, n)
				r.MaxMu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
}

func (r *PoolRig) SetUp(t *testing.T, max int) *api.Client {
	leader := r.Cluster.WaitLeader()
	admin := r.Cluster.Client(leader)
	Upload(t, admin, "tiny", TinyImage(t))
	// On every node, so that losing one leaves the others able to run VMs.
	if _, err := admin.CacheImage(Ctx(t), NS, "tiny", api.ImageCacheRequest{All: true}); err != nil {
		t.Fatal(err)
	}
	r.Cluster.WaitFor("the image on every node", 30*time.Second, func() error {
		c, err := admin.ImageCache(Ctx(t), NS, "tiny")
		if err != nil || len(c.Nodes) != len(r.Cluster.Members) {
			return fmt.Errorf("on %v (%v)", c.Nodes, err)
		}
		return nil
	})
	if _, err := admin.CreateVMConfig(Ctx(t), NS, api.VMConfig{Name: "runner", Image: "tiny", CPU: 1, Memory: 0.25}); err != nil {
		t.Fatal(err)
	}
	r.CreatePool(t, admin, "runner", "runner --jitconfig {jitconfig}", max)
	return admin
}

// CreatePool makes pool "ci" of the VM config, its webhook delivered to a
// follower.
func (r *PoolRig) CreatePool(t *testing.T, admin *api.Client, vmconfig, command string, max int) {
	t.Helper()
	leader := r.Cluster.WaitLeader()
	pool, err := admin.CreateRunnerPool(Ctx(t), NS, api.RunnerPoolRequest{Name: "ci", VMConfig: vmconfig, Labels: []string{"svc-linux"}, Max: max,
		RunnerCommand: command, JobTimeout: "30m",
		GitHub: api.RunnerPoolGitHubRequest{URL: "https://github.com/acme/app", APIBase: r.GitHub.URL, Token: r.GitHub.Token, WebhookSecret: r.Secret}})
	if err != nil {
		t.Fatal(err)
	}
	if !pool.GitHub.TokenSet || strings.Contains(fmt.Sprint(pool), r.GitHub.Token) {
		t.Fatalf("pool %+v", pool)
	}
	// GitHub delivers to every peer's address alike; this one to a follower.
	to := leader
	if f := r.Cluster.Followers(); len(f) > 0 {
		to = f[0]
	}
	r.GitHub.Hook("http://"+to.Peer.APIAddr()+pool.WebhookPath, []byte(r.Secret))
}

// WaitDone waits until every job of the stand-in completed and the pool has
// no VM left.
func (r *PoolRig) WaitDone(t *testing.T, admin *api.Client, jobs int, timeout time.Duration) {
	r.Cluster.WaitFor("every job done and every VM gone", timeout, func() error {
		done := 0
		for _, j := range r.GitHub.Jobs() {
			if j.Status == "completed" {
				done++
			}
		}
		p, err := admin.GetRunnerPool(context.Background(), NS, "ci")
		if err != nil {
			return err
		}
		if done != jobs || p.Status.VMs != 0 || p.Status.Done != jobs {
			var b strings.Builder
			for _, j := range r.GitHub.Jobs() {
				fmt.Fprintf(&b, "\n  github job %d %s on %q", j.ID, j.Status, j.RunnerName)
			}
			recs, _ := admin.ListRunnerJobs(context.Background(), NS, "ci")
			for _, j := range recs {
				fmt.Fprintf(&b, "\n  record %d %s vm %q: %s", j.ID, j.State, j.VM, j.Message)
			}
			return fmt.Errorf("%d of %d jobs completed; pool %+v%s", done, jobs, p.Status, b.String())
		}
		return nil
	})
}

func (r *PoolRig) CheckOnce(t *testing.T) {
	t.Helper()
	r.Runs.Range(func(k, v any) bool {
		if n := v.(*atomic.Int32).Load(); n != 1 {
			t.Errorf("job %v ran %d times", k, n)
		}
		return true
	})
}

// KillLeaderWhileRunning queues n jobs, kills the leader once one runs
// (waiting at most wait), and returns an admin client of the new leader
// and the killed member. GitHub then delivers to the new leader (the
// webhook's peer may be the one that died: the sweep finds what it missed).
func (r *PoolRig) KillLeaderWhileRunning(t *testing.T, admin *api.Client, n int, wait time.Duration) (*api.Client, *testcluster.Member) {
	t.Helper()
	labels := make([][]string, n)
	for i := range labels {
		labels[i] = []string{"svc-linux"}
	}
	r.GitHub.Queue(context.Background(), "acme/app", false, labels...)
	r.Cluster.WaitFor("jobs running", wait, func() error {
		p, err := admin.GetRunnerPool(context.Background(), NS, "ci")
		if err != nil || p.Status.Running == 0 {
			return fmt.Errorf("%+v %v", p.Status, err)
		}
		return nil
	})
	old := r.Cluster.WaitLeader()
	r.Cluster.Crash(old)
	nl := r.Cluster.WaitLeader()
	r.GitHub.Hook("http://"+nl.Peer.APIAddr()+"/api/v1/namespaces/"+NS+"/runnerpools/ci/webhook", []byte(r.Secret))
	return r.Cluster.Client(nl), old
}

// OneJobDoneOn queues one job and checks that it ran once, on the VM of
// the pool's attempt-th claim of it, and is done.
func (r *PoolRig) OneJobDoneOn(t *testing.T, admin *api.Client, attempt int) {
	t.Helper()
	jobs := r.GitHub.Queue(context.Background(), "acme/app", false, []string{"svc-linux"})
	r.WaitDone(t, admin, 1, time.Minute)
	r.CheckOnce(t)
	recs, err := admin.ListRunnerJobs(Ctx(t), NS, "ci")
	if err != nil || len(recs) != 1 || recs[0].Attempts != attempt || recs[0].VM != runnerpool.VMName("ci", jobs[0].ID, attempt) {
		t.Fatalf("records %+v %v: want the job done on the VM of attempt %d", recs, err, attempt)
	}
	if got := r.GitHub.Jobs()[jobs[0].ID].RunnerName; got != recs[0].VM {
		t.Fatalf("the job ran on %q, its record names %s", got, recs[0].VM)
	}
}

// DeliverTo posts a workflow_job delivery to pool's webhook, and returns
// the status code and the answer's body.
func DeliverTo(t *testing.T, m *testcluster.Member, pool string, body []byte, sig string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+m.Peer.APIAddr()+"/api/v1/namespaces/"+NS+"/runnerpools/"+pool+"/webhook", bytes.NewReader(body))
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

// CheckRealRun checks what GitHub's stand-in saw: every job completed by
// a runner of its own, in a VM of its own, and no runner left registered;
// and that no VM of the pool is left, in the API or in libvirt.
func (r *PoolRig) CheckRealRun(t *testing.T, admin *api.Client, jobs int) {
	t.Helper()
	runners := map[string]int64{}
	for id, j := range r.GitHub.Jobs() {
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
	if left := r.GitHub.Runners(); len(left) != 0 {
		t.Errorf("runners left registered: %+v", left)
	}
	vms, err := admin.ListVMs(Ctx(t), NS)
	if err != nil || len(vms) != 0 {
		t.Errorf("VMs left: %+v %v", vms, err)
	}
	r.Cluster.WaitFor("no domain of the pool left in libvirt", DomainGoneWait, func() error {
		for _, m := range r.Cluster.Running() {
			doms, err := m.Libvirt.List(Ctx(t))
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
