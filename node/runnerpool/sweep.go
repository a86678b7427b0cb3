package runnerpool

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/runners/github"
)

// maxJobChecks bounds the jobs one sweep asks GitHub about.
const maxJobChecks = 20

// checkEvery is how often the sweep asks GitHub of one job it serves (a
// fallback for a lost in_progress or completed delivery, each a read):
// ten sweeps (5 minutes at the default poll interval), so that 40 jobs
// under way cost GitHub 480 reads an hour, not 40 a sweep.
func (c *Controller) checkEvery() time.Duration { return 10 * c.cfg.PollInterval }

// sweep asks GitHub for the queued jobs a webhook may have missed (in
// queued runs and in runs under way), and for the state of the jobs the
// pool serves, the ones asked of longest ago first, each at most every
// checkEvery: all within the client's read budget (github.ReadsPerHour).
func (c *Controller) sweep(ctx context.Context, p raftfsm.RunnerPool, cl *github.Client, known []raftfsm.RunnerJob) {
	have := map[int64]raftfsm.RunnerJob{}
	for _, j := range known {
		have[j.ID] = j
	}
	labels := Labels(c.cfg.FSM, p)
	queued, err := cl.QueuedJobs(ctx)
	if err != nil {
		c.cfg.Log.Warn("runner pool: queued jobs", "pool", p.Name, "found", len(queued), "err", err)
	}
	for _, j := range queued {
		if _, ok := have[j.ID]; ok || !github.Matches(labels, j.Labels) {
			continue
		}
		_, _ = c.cfg.Apply(ctx, raftfsm.TypeRunnerJobUpdate, raftfsm.RunnerJobUpdate{Job: raftfsm.RunnerJob{
			Namespace: p.Namespace, Pool: p.Name, ID: j.ID, RunID: j.RunID, Repo: j.Repo, Labels: j.Labels, State: raftfsm.RunnerJobQueued,
			Message: "found by polling (no webhook delivery)"}, Time: time.Now().UTC()})
	}
	now := time.Now()
	checkKey := func(j raftfsm.RunnerJob) string { return poolKey(p) + "/" + strconv.FormatInt(j.ID, 10) }
	var check []raftfsm.RunnerJob
	c.mu.Lock()
	for _, j := range known {
		if j.State != raftfsm.RunnerJobCompleted && j.State != raftfsm.RunnerJobDone && j.Repo != "" && now.Sub(c.checked[checkKey(j)]) >= c.checkEvery() {
			check = append(check, j)
		}
	}
	last := maps.Clone(c.checked)
	c.mu.Unlock()
	slices.SortFunc(check, func(a, b raftfsm.RunnerJob) int {
		if n := last[checkKey(a)].Compare(last[checkKey(b)]); n != 0 {
			return n
		}
		return a.QueuedAt.Compare(b.QueuedAt)
	})
	for _, j := range check[:min(len(check), maxJobChecks)] {
		gj, conclusion, err := cl.JobState(ctx, j.Repo, j.ID)
		if errors.Is(err, github.ErrReadBudget) || errors.Is(err, github.ErrLimited) {
			break
		}
		c.mu.Lock()
		c.checked[checkKey(j)] = now
		c.mu.Unlock()
		switch {
		case err != nil:
		case gj.Status == "completed":
			c.Ran(ctx, p, gj, conclusion)
		case gj.Status == "in_progress" && gj.RunnerName != "" && gj.RunnerName != j.VM:
			c.Ran(ctx, p, gj, "")
		}
	}
	c.forget(p, known)
	c.exits(ctx, p, cl)
}

// forget drops the checks of jobs the pool no longer has.
func (c *Controller) forget(p raftfsm.RunnerPool, known []raftfsm.RunnerJob) {
	ids := map[string]bool{}
	for _, j := range known {
		ids[poolKey(p)+"/"+strconv.FormatInt(j.ID, 10)] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.checked {
		if strings.HasPrefix(k, poolKey(p)+"/") && !ids[k] {
			delete(c.checked, k)
		}
	}
}

// exits looks for runners that ended (their exit status in the guest, or
// their VM gone) while their job, as GitHub tells, never started on them:
// such a job is queued again, for a new VM, and the VM goes. A runner that ended with
// its job is left to the job's completed event.
func (c *Controller) exits(ctx context.Context, p raftfsm.RunnerPool, gh *github.Client) {
	vmc, err := c.apiClient(p)
	if err != nil {
		return
	}
	checked := 0
	for _, j := range c.cfg.FSM.RunnerJobs(p.Namespace, p.Name) {
		if j.State != raftfsm.RunnerJobRunning || j.Repo == "" || checked >= maxJobChecks {
			continue
		}
		checked++
		// A VM that is gone (deleted through another job's record after
		// GitHub swapped their runners, or by hand) ended its runner too.
		status, ended := "its VM is gone", true
		if _, ok := c.cfg.FSM.VM(p.Namespace, j.VM); ok {
			status, ended = c.runnerExited(ctx, vmc, p.Namespace, j.VM)
		}
		if !ended {
			continue
		}
		gj, conclusion, err := gh.JobState(ctx, j.Repo, j.ID)
		switch {
		case err != nil:
			continue
		case gj.Status == "completed" || gj.Status == "in_progress" && gj.RunnerName != "":
			c.Ran(ctx, p, gj, conclusion)
			continue
		}
		if err := gh.RemoveRunner(ctx, j.RunnerID); err != nil {
			continue // busy after all, or GitHub unreachable: the next sweep sees
		}
		c.cfg.Log.Info("runner pool: a runner ended without its job", "pool", p.Name, "vm", j.VM, "status", status)
		j.State, j.Message, j.RunnerID = raftfsm.RunnerJobQueued, "queued again: the runner in "+j.VM+" ended (status "+status+") before it took a job", 0
		if _, err := c.cfg.Apply(ctx, raftfsm.TypeRunnerJobUpdate, raftfsm.RunnerJobUpdate{Job: raftfsm.RunnerJob{
			Namespace: j.Namespace, Pool: j.Pool, State: j.State, Message: j.Message},
			ByVM: j.VM, Requeue: true, RunnerEnded: true, Time: time.Now().UTC()}); err != nil {
			continue
		}
		if err := vmc.DeleteVM(ctx, p.Namespace, j.VM); err != nil && api.CodeOf(err) != http.StatusNotFound {
			c.cfg.Log.Warn("runner pool: delete a spent runner's VM", "vm", j.VM, "err", err)
		}
	}
}

// Ran records what GitHub says of a job that a runner took (in_progress)
// or that completed (a webhook delivery, or the sweep): the records follow
// the runner GitHub chose (raftfsm.RunnerJobRan); the VM that ran a
// completed job goes.
func (c *Controller) Ran(ctx context.Context, p raftfsm.RunnerPool, gj github.Job, conclusion string) {
	state := raftfsm.RunnerJobRunning
	if gj.Status == "completed" {
		state = raftfsm.RunnerJobCompleted
	}
	_, err := c.cfg.Apply(ctx, raftfsm.TypeRunnerJobRan, raftfsm.RunnerJobRan{Job: raftfsm.RunnerJob{
		Namespace: p.Namespace, Pool: p.Name, ID: gj.ID, RunID: gj.RunID, Repo: gj.Repo, Labels: gj.Labels,
		State: state, Conclusion: conclusion}, Runner: gj.RunnerName, Time: time.Now().UTC()})
	if err != nil {
		c.cfg.Log.Warn("runner pool: record a job's runner", "pool", p.Name, "job", gj.ID, "runner", gj.RunnerName, "err", err)
	}
}
