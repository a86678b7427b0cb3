package runnerpool

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
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

// update proposes the next state of the job that holds j.VM: GitHub may
// have moved the VM to another job since it was claimed (RunnerJobRan).
func (c *Controller) update(ctx context.Context, j raftfsm.RunnerJob, requeue bool) error {
	_, err := c.cfg.Apply(ctx, raftfsm.TypeRunnerJobUpdate, raftfsm.RunnerJobUpdate{Job: raftfsm.RunnerJob{
		Namespace: j.Namespace, Pool: j.Pool, State: j.State, RunnerID: j.RunnerID, Message: j.Message},
		ByVM: j.VM, Requeue: requeue, Time: time.Now().UTC()})
	return err
}

// start makes a claimed job's VM, then registers its runner (a
// just-in-time configuration GitHub gives for the VM's name) and starts it
// in the guest: a start that cannot have its VM asks GitHub nothing. Any
// failure puts the job back in the queue, saying why, and the pool backs
// off before its next claim.
func (c *Controller) start(ctx context.Context, p raftfsm.RunnerPool, gh *github.Client, j raftfsm.RunnerJob) {
	fail := func(err error) {
		wait := c.backoffs.Fail(poolKey(p), time.Now())
		c.cfg.Log.Info("runner pool: job waits", "pool", p.Name, "job", j.ID, "vm", j.VM, "err", err, "backoff", wait.Round(time.Millisecond))
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		c.undo(bg, p, gh, j, fmt.Sprintf("waiting: %v (the pool tries again in %s)", err, wait.Round(time.Second)))
	}
	cl, err := c.apiClient(p)
	if err != nil {
		fail(err)
		return
	}
	c.removeEarlierRunner(ctx, p, gh, j)
	// fail speaks without ctx's end (context.WithoutCancel).
	ctx, cancel := c.watchNode(ctx, p.Namespace, j.VM)
	defer cancel()
	began := time.Now()
	ttl := (time.Duration(p.JobTimeoutSeconds)*time.Second + 5*time.Minute).String()
	vm, err := cl.DeployVM(ctx, p.Namespace, api.DeployRequest{Name: j.VM, VMConfig: p.VMConfig, TTL: ttl,
		CustomMetadata: map[string]string{MetaPool: p.Name, MetaJob: fmt.Sprint(j.ID)}})
	if err != nil {
		fail(fmt.Errorf("deploy: %w", errors.Join(err, context.Cause(ctx))))
		return
	}
	deployed := time.Now()
	// The runner starts in a guest that answers and has its own identity.
	if err := cl.WaitGuestReady(ctx, p.Namespace, vm.Name, c.cfg.AgentWait); err != nil {
		fail(errors.Join(err, context.Cause(ctx)))
		return
	}
	ready := time.Now()
	// The runner is named after the VM: GitHub's in_progress and completed
	// deliveries name it, which tells which VM ran which job.
	runnerID, jit, err := gh.JITConfig(ctx, j.VM, Labels(c.cfg.FSM, p), p.GitHub.RunnerGroupID)
	if err != nil && strings.Contains(err.Error(), "409") {
		// A runner of this name is left from an earlier try: remove, ask again.
		err = errors.New("a runner named " + j.VM + " exists already; it is removed at the next try")
	}
	if err != nil {
		fail(err)
		return
	}
	j.RunnerID = runnerID
	// The runner's id, so that a later cleanup can remove it. A job that
	// ended meanwhile (another runner took it) has its VM go with the
	// runner unstarted.
	if err := c.update(ctx, j, false); err != nil {
		c.cfg.Log.Info("runner pool: start given up", "pool", p.Name, "vm", j.VM, "err", err)
		bg := context.WithoutCancel(ctx)
		_ = gh.RemoveRunner(bg, runnerID)
		if err := cl.DeleteVM(bg, p.Namespace, j.VM); err != nil && api.CodeOf(err) != http.StatusNotFound {
			c.cfg.Log.Warn("runner pool: delete a given-up start's VM", "vm", j.VM, "err", err)
		}
		return
	}
	registered := time.Now()
	cmd := strings.ReplaceAll(p.RunnerCommand, "{jitconfig}", jit)
	// Detached: the runner lives as long as its job; the agent's call ends
	// now. Its exit status is left for the sweep (runnerExited).
	r, err := cl.RunVM(ctx, p.Namespace, vm.Name, api.RunRequest{Command: []string{"sh", "-c",
		`(sh -c "$1" >` + RunnerLog + ` 2>&1 </dev/null; echo $? >` + RunnerExit + `) >/dev/null 2>&1 </dev/null &`, "svc-runner", cmd}})
	if err != nil || r.ExitCode != 0 {
		fail(fmt.Errorf("start the runner in %s: %v %s", vm.Name, err, r.Stderr))
		return
	}
	c.backoffs.Forget(poolKey(p))
	c.cfg.Log.Info("runner pool: runner started", "pool", p.Name, "vm", j.VM, "node", vm.Node,
		"deploy", deployed.Sub(began).Round(time.Millisecond), "ready", ready.Sub(deployed).Round(time.Millisecond),
		"register", registered.Sub(ready).Round(time.Millisecond), "start", time.Since(registered).Round(time.Millisecond))
	j.State, j.Message = raftfsm.RunnerJobRunning, ""
	if err := c.update(ctx, j, false); err != nil {
		c.cfg.Log.Warn("runner pool: record running", "pool", p.Name, "job", j.ID, "err", err)
	}
}

// Where the runner's output and exit status are kept in the guest.
const (
	RunnerLog  = "/var/log/svc-runner.log"
	RunnerExit = "/var/log/svc-runner.exit"
)

// runnerExited reports whether the runner in a job's VM has ended, with
// the status it left (an agent that cannot tell says no).
func (c *Controller) runnerExited(ctx context.Context, cl *api.Client, ns, vm string) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := cl.RunVM(ctx, ns, vm, api.RunRequest{Command: []string{"cat", RunnerExit}})
	if err != nil || r.ExitCode != 0 || strings.TrimSpace(r.Stdout) == "" {
		return "", false
	}
	return strings.TrimSpace(r.Stdout), true
}

// errNodeLost ends a start whose VM landed on a node that stopped.
var errNodeLost = errors.New("the VM's node is not ready")

// watchNode returns a context that ends, with errNodeLost as its cause,
// once the VM is placed on a node that is not ready (a peer that died
// while the VM was being made: its deploy would wait in vain).
func (c *Controller) watchNode(ctx context.Context, ns, vm string) (context.Context, context.CancelFunc) {
	wctx, cancel := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
			v, ok := c.cfg.FSM.VM(ns, vm)
			if !ok || v.Node == "" {
				continue
			}
			if n, ok := c.cfg.FSM.Node(v.Node); ok && n.Phase == api.PhaseNotReady {
				cancel(fmt.Errorf("%w: %s", errNodeLost, v.Node))
				return
			}
		}
	}()
	return wctx, func() { cancel(nil) }
}

// removeEarlierRunner removes the runner of the job's previous attempt
// when one is still registered and idle and its VM is gone: a leader that
// died between GitHub's just-in-time configuration and the record of the
// runner's id left it unknown to the state, and no undo could remove it
// (GitHub keeps an offline runner for a day). One read of the sweep's
// budget, on a job's second attempt and after.
func (c *Controller) removeEarlierRunner(ctx context.Context, p raftfsm.RunnerPool, gh *github.Client, j raftfsm.RunnerJob) {
	if j.Attempts < 1 {
		return // the first attempt: nothing earlier
	}
	prev := VMName(p.Name, j.ID, j.Attempts)
	if _, ok := c.cfg.FSM.VM(p.Namespace, prev); ok {
		return // its VM is there: its own undo or the sweep deals with it
	}
	id, busy, found, err := gh.RunnerNamed(ctx, prev)
	if err != nil || !found || busy {
		return // unknown (the next attempt looks again), none, or it runs a job after all
	}
	if err := gh.RemoveRunner(ctx, id); err != nil {
		c.cfg.Log.Info("runner pool: an earlier attempt's runner stays", "pool", p.Name, "runner", prev, "err", err)
		return
	}
	c.cfg.Log.Info("runner pool: removed an earlier attempt's runner left registered", "pool", p.Name, "runner", prev)
}

// undo takes back a start that did not end with its runner started (it
// failed, or another leader left it): the runner is removed first, so
// that it cannot take a job once its VM is going. A runner GitHub refuses
// to remove runs a job already (its start failed only as far as svc could
// tell): it and its VM stay, and the job is running. Else the VM goes and
// the job is queued again, saying why. When GitHub or the API cannot be
// reached, the job stays starting and the next pass undoes it.
func (c *Controller) undo(ctx context.Context, p raftfsm.RunnerPool, gh *github.Client, j raftfsm.RunnerJob, why string) {
	if j.RunnerID != 0 {
		err := gh.RemoveRunner(ctx, j.RunnerID)
		if errors.Is(err, github.ErrRunnerBusy) {
			c.cfg.Log.Info("runner pool: the runner took a job although its start failed; it stays", "pool", p.Name, "vm", j.VM)
			j.State, j.Message = raftfsm.RunnerJobRunning, ""
			_ = c.update(ctx, j, false)
			return
		}
		if err != nil {
			return
		}
	}
	cl, err := c.apiClient(p)
	if err != nil {
		return
	}
	if err := cl.DeleteVM(ctx, p.Namespace, j.VM); err != nil && api.CodeOf(err) != http.StatusNotFound {
		return
	}
	j.State, j.Message, j.RunnerID = raftfsm.RunnerJobQueued, why, 0
	// A conflict: GitHub moved the VM to another job meanwhile (RunnerJobRan).
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
	if j.RunnerID != 0 && !j.RunnerGone {
		// A runner GitHub said ran the job is removed by GitHub itself:
		// a DELETE of it would be answered 404 and spend a write of the
		// GitHub budget. Any other (a job cancelled before it started)
		// is removed; one gone already is no error.
		_ = gh.RemoveRunner(ctx, j.RunnerID)
	}
	j.State, j.Message = raftfsm.RunnerJobDone, ""
	_ = c.update(ctx, j, false)
	c.backoffs.Forget(poolKey(p)) // its VM's room is free for the next job
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
