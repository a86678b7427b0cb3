package raftfsm

import (
	"strconv"
	"time"
)

// RunnerJobRan records what GitHub says of a job and the runner that took
// it: the job is in progress on the runner, or completed (Job.State
// running or completed; Job.Conclusion). Runner is the runner's name: the
// VM it runs in when it is one of the pool's ("" when the job completed
// before any runner took it: cancelled).
//
// GitHub gives a queued job to any idle runner whose labels match, not to
// the one made for it, so records follow GitHub: the job's record takes
// the VM that runs it, and the record that VM was made for takes the job's
// VM in exchange, or, when the job had none yet, is queued again (its
// runner is spent). So every job that waits keeps exactly one VM on its
// way, whatever runner GitHub picks.
type RunnerJobRan struct {
	Job    RunnerJob `json:"job"`
	Runner string    `json:"runner,omitempty"`
	Time   time.Time `json:"time"`
}

// runnerJobActive says whether a job holds its VM.
func runnerJobActive(j *RunnerJob) bool {
	return j.VM != "" && (j.State == RunnerJobStarting || j.State == RunnerJobRunning || j.State == RunnerJobCompleted)
}

// runnerJobHolding returns the job of a pool that holds a VM, or nil.
func (s *State) runnerJobHolding(ns, pool, vm string) *RunnerJob {
	for _, j := range s.RunnerJobs {
		if j.Namespace == ns && j.Pool == pool && j.VM == vm && runnerJobActive(j) {
			return j
		}
	}
	return nil
}

func (s *State) applyRunnerJobRan(c RunnerJobRan) (any, error) {
	in := c.Job
	if _, ok := s.RunnerPools[key(in.Namespace, in.Pool)]; !ok {
		return nil, ruleErr(ErrNotFound, "runner pool %q not found", in.Pool)
	}
	if in.ID <= 0 {
		return nil, ruleErr(ErrInvalid, "a job needs its provider's id")
	}
	if in.State != RunnerJobRunning && in.State != RunnerJobCompleted {
		return nil, ruleErr(ErrInvalid, "a job ran: running or completed, not %q", in.State)
	}
	if len(in.Message) > MaxJobMessage {
		in.Message = in.Message[:MaxJobMessage]
	}
	t := c.Time
	k := runnerJobKey(in.Namespace, in.Pool, in.ID)
	b := s.RunnerJobs[k]
	var x *RunnerJob
	if c.Runner != "" {
		x = s.runnerJobHolding(in.Namespace, in.Pool, c.Runner)
	}
	// advance moves a job that holds the runner's VM on to the event's state.
	advance := func(j *RunnerJob) {
		if runnerJobOrder[in.State] > runnerJobOrder[j.State] {
			j.State = in.State
		}
		if j.StartedAt == nil {
			j.StartedAt = &t
		}
		if in.Conclusion != "" {
			j.Conclusion = in.Conclusion
		}
		if in.State == RunnerJobCompleted && c.Runner != "" {
			j.RunnerGone = true
		}
	}
	switch {
	case b != nil && (b.State == RunnerJobCompleted || b.State == RunnerJobDone) && x != nil && x != b:
		// The job was closed already (a poll saw it first), yet it spent
		// x's runner: x waits for another.
		requeueSpent(x, in.ID)
		return b.clone(), nil
	case b != nil && (b.State == RunnerJobCompleted || b.State == RunnerJobDone):
		return b.clone(), nil // said before
	case x == nil:
		// Not one of the pool's runners (or none): the job needs nothing
		// of the pool; a VM it holds serves nobody now.
		if b == nil {
			return nil, nil
		}
		switch {
		case b.State == RunnerJobQueued:
			b.State, b.Message = RunnerJobDone, "taken by a runner that is not one of this pool's VMs"
			if c.Runner == "" {
				b.Message = "completed before a runner took it"
			}
			if in.Conclusion != "" {
				b.Conclusion = in.Conclusion
			}
			b.DoneAt = &t
			s.pruneRunnerJobs(in.Namespace, in.Pool)
		default: // starting or running: its VM goes
			b.State, b.Message = RunnerJobCompleted, "taken by a runner that is not one of this pool's VMs"
			if c.Runner == "" {
				b.Message = "completed before a runner took it"
			}
			if in.Conclusion != "" {
				b.Conclusion = in.Conclusion
			}
		}
		return b.clone(), nil
	case x == b:
		advance(b)
		return b.clone(), nil
	}
	if b == nil {
		if s.countRunnerJobs(in.Namespace, in.Pool) >= MaxRunnerJobs {
			return nil, ruleErr(ErrConflict, "pool %q tracks %d jobs, the most it may", in.Pool, MaxRunnerJobs)
		}
		b = in.clone()
		b.State, b.VM, b.RunnerID, b.Attempts, b.StartedAt, b.DoneAt, b.Message = RunnerJobQueued, "", 0, 0, nil, nil, ""
		if b.QueuedAt.IsZero() {
			b.QueuedAt = t
		}
		s.RunnerJobs[k] = b
	}
	// GitHub gave b's job to x's runner.
	if b.State == RunnerJobQueued {
		b.VM, b.RunnerID, b.Attempts = x.VM, x.RunnerID, b.Attempts+1
		requeueSpent(x, in.ID)
	} else {
		// Both hold VMs: swap them (b's runner is still free for x's job).
		x.VM, b.VM = b.VM, x.VM
		x.RunnerID, b.RunnerID = b.RunnerID, x.RunnerID
		x.State, x.StartedAt = b.State, nil
		if x.State == RunnerJobRunning {
			x.StartedAt = &t
		}
		x.Message = "its VM took another job; it has that job's VM"
	}
	b.Message = ""
	advance(b)
	return b.clone(), nil
}

// requeueSpent queues a job again whose VM's runner took job id.
func requeueSpent(x *RunnerJob, id int64) {
	x.State, x.VM, x.RunnerID, x.StartedAt = RunnerJobQueued, "", 0, nil
	x.Message = "queued again: its VM's runner took job " + strconv.FormatInt(id, 10)
}

// countRunnerJobs counts the jobs a pool tracks.
func (s *State) countRunnerJobs(ns, pool string) int {
	n := 0
	for _, o := range s.RunnerJobs {
		if o.Namespace == ns && o.Pool == pool {
			n++
		}
	}
	return n
}
