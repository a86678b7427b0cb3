package runnerpool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi/auth"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/runners/github"
)

// apiClient is the pool's service account at this peer's API.
func (c *Controller) apiClient(p raftfsm.RunnerPool) (*api.Client, error) {
	sa, ok := c.cfg.FSM.ServiceAccount(p.Namespace, ServiceAccount(p.Name))
	if !ok {
		return nil, fmt.Errorf("the pool's service account %s is missing", ServiceAccount(p.Name))
	}
	_, clusterID := c.cfg.FSM.Initialized()
	tok, _, err := auth.Sign(c.cfg.Keys.SigningKey(), clusterID, auth.Principal{Kind: auth.KindServiceAccount, Name: sa.Name, Namespace: sa.Namespace, UID: sa.UID}, time.Hour, time.Now())
	if err != nil {
		return nil, err
	}
	cl := api.NewClient(c.cfg.APIURL(), tok)
	cl.HTTP.Timeout = 2 * time.Minute
	return cl, nil
}

// update proposes a job's next state.
func (c *Controller) update(ctx context.Context, j raftfsm.RunnerJob, requeue bool) error {
	_, err := c.cfg.Apply(ctx, raftfsm.TypeRunnerJobUpdate, raftfsm.RunnerJobUpdate{Job: j, Requeue: requeue, Time: time.Now().UTC()})
	return err
}

// start makes a claimed job's VM and starts its runner. A VM that cannot be
// placed, or any failure, puts the job back in the queue, saying why.
func (c *Controller) start(ctx context.Context, p raftfsm.RunnerPool, gh *github.Client, j raftfsm.RunnerJob) {
	fail := func(err error) {
		c.cfg.Log.Info("runner pool: job waits", "pool", p.Name, "job", j.ID, "err", err)
		if cl, cerr := c.apiClient(p); cerr == nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			_ = cl.DeleteVM(dctx, p.Namespace, j.VM)
			cancel()
		}
		if j.RunnerID != 0 {
			_ = gh.RemoveRunner(context.WithoutCancel(ctx), j.RunnerID)
		}
		j.State, j.Message, j.RunnerID = raftfsm.RunnerJobQueued, "waiting: "+err.Error(), 0
		_ = c.update(context.WithoutCancel(ctx), j, true)
	}
	cl, err := c.apiClient(p)
	if err != nil {
		fail(err)
		return
	}
	// The runner is named after the VM: GitHub's in_progress and completed
	// deliveries name it, which tells which VM ran which job.
	runnerID, jit, err := gh.JITConfig(ctx, j.VM, p.Labels, p.GitHub.RunnerGroupID)
	if err != nil && strings.Contains(err.Error(), "409") {
		// A runner of this name is left from an earlier try: remove, ask again.
		err = errors.New("a runner named " + j.VM + " exists already; it is removed at the next try")
	}
	if err != nil {
		fail(err)
		return
	}
	j.RunnerID = runnerID
	_ = c.update(ctx, j, false) // the runner's id, so a later cleanup can remove it
	ttl := (time.Duration(p.JobTimeoutSeconds)*time.Second + 5*time.Minute).String()
	vm, err := cl.DeployVM(ctx, p.Namespace, api.DeployRequest{Name: j.VM, VMConfig: p.VMConfig, TTL: ttl,
		CustomMetadata: map[string]string{MetaPool: p.Name, MetaJob: fmt.Sprint(j.ID)}})
	if err != nil {
		fail(fmt.Errorf("deploy: %w", err))
		return
	}
	if err := c.waitAgent(ctx, cl, p.Namespace, vm.Name); err != nil {
		fail(err)
		return
	}
	cmd := strings.ReplaceAll(p.RunnerCommand, "{jitconfig}", jit)
	// Detached: the runner lives as long as its job; the agent's call ends now.
	r, err := cl.RunVM(ctx, p.Namespace, vm.Name, api.RunRequest{Command: []string{"sh", "-c", `nohup sh -c "$1" >/var/log/svc-runner.log 2>&1 </dev/null &`, "svc-runner", cmd}})
	if err != nil || r.ExitCode != 0 {
		fail(fmt.Errorf("start the runner in %s: %v %s", vm.Name, err, r.Stderr))
		return
	}
	j.State, j.Message = raftfsm.RunnerJobRunning, ""
	if err := c.update(ctx, j, false); err != nil {
		c.cfg.Log.Warn("runner pool: record running", "pool", p.Name, "job", j.ID, "err", err)
	}
}

// waitAgent waits until the VM's agent runs a command.
func (c *Controller) waitAgent(ctx context.Context, cl *api.Client, ns, vm string) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.AgentWait)
	defer cancel()
	for {
		r, err := cl.RunVM(ctx, ns, vm, api.RunRequest{Command: []string{"true"}})
		if err == nil && r.ExitCode == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the agent of %s did not answer within %s: %v", vm, c.cfg.AgentWait, err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// abandon undoes a start another leader left: the VM and runner go, the
// job is queued again.
func (c *Controller) abandon(ctx context.Context, p raftfsm.RunnerPool, gh *github.Client, j raftfsm.RunnerJob) {
	if cl, err := c.apiClient(p); err == nil {
		if err := cl.DeleteVM(ctx, p.Namespace, j.VM); err != nil && api.CodeOf(err) != http.StatusNotFound {
			return // try again at the next pass
		}
	}
	if j.RunnerID != 0 {
		_ = gh.RemoveRunner(ctx, j.RunnerID)
	}
	j.State, j.Message, j.RunnerID = raftfsm.RunnerJobQueued, "queued again: the leader that started it changed", 0
	_ = c.update(ctx, j, true)
}

// finish deletes a completed job's VM and runner, then marks it done.
func (c *Controller) finish(ctx context.Context, p raftfsm.RunnerPool, gh *github.Client, j raftfsm.RunnerJob) {
	cl, err := c.apiClient(p)
	if err != nil {
		return
	}
	if j.VM != "" {
		if err := cl.DeleteVM(ctx, p.Namespace, j.VM); err != nil && api.CodeOf(err) != http.StatusNotFound {
			c.cfg.Log.Warn("runner pool: delete a job's VM", "pool", p.Name, "vm", j.VM, "err", err)
			return
		}
	}
	if j.RunnerID != 0 {
		_ = gh.RemoveRunner(ctx, j.RunnerID) // an ephemeral runner is gone already
	}
	j.State = raftfsm.RunnerJobDone
	_ = c.update(ctx, j, false)
}

// orphans deletes VMs of a pool that no starting, running or completed job
// names (a pool deleted, a job done whose VM outlived a crash).
func (c *Controller) orphans(ctx context.Context) {
	named := map[string]bool{}
	for _, p := range c.cfg.FSM.RunnerPools("") {
		for _, j := range c.cfg.FSM.RunnerJobs(p.Namespace, p.Name) {
			if j.VM != "" && j.State != raftfsm.RunnerJobDone && j.State != raftfsm.RunnerJobQueued {
				named[p.Namespace+"/"+j.VM] = true
			}
		}
	}
	for _, vm := range c.cfg.FSM.VMs("") {
		pool := vm.CustomMetadata[MetaPool]
		if pool == "" || named[vm.Namespace+"/"+vm.Name] {
			continue
		}
		p, ok := c.cfg.FSM.RunnerPool(vm.Namespace, pool)
		if !ok {
			// The pool is gone: its account may be too; delete as the leader.
			_, _ = c.cfg.Apply(ctx, raftfsm.TypeVMDelete, raftfsm.VMDelete{Namespace: vm.Namespace, Name: vm.Name, UID: vm.UID})
			continue
		}
		if cl, err := c.apiClient(p); err == nil {
			c.cfg.Log.Info("runner pool: deleting an orphan VM", "pool", pool, "vm", vm.Name)
			_ = cl.DeleteVM(ctx, vm.Namespace, vm.Name)
		}
	}
}
