package raftfsm

import (
	"slices"
	"strconv"
	"time"
)

// States of a runner job.
const (
	// RunnerJobQueued: the provider queued it; no VM yet (or the last try
	// could not be placed: Message says why).
	RunnerJobQueued = "queued"
	// RunnerJobStarting: its VM is named and being made, its runner started.
	RunnerJobStarting = "starting"
	// RunnerJobRunning: its runner runs in the VM.
	RunnerJobRunning = "running"
	// RunnerJobCompleted: the provider says the job is done; its VM goes.
	RunnerJobCompleted = "completed"
	// RunnerJobDone: its VM and runner are gone.
	RunnerJobDone = "done"
)

var runnerJobOrder = map[string]int{RunnerJobQueued: 0, RunnerJobStarting: 1, RunnerJobRunning: 2, RunnerJobCompleted: 3, RunnerJobDone: 4}

// RunnerJob is one CI job a pool took.
type RunnerJob struct {
	Namespace string   `json:"namespace"`
	Pool      string   `json:"pool"`
	ID        int64    `json:"id"`
	RunID     int64    `json:"runId,omitempty"`
	Repo      string   `json:"repo,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	State     string   `json:"state"`
	// VM is the job's VM, named when the job was claimed (at most one at a
	// time; it may be swapped with another job's: see RunnerJobRan).
	VM string `json:"vm,omitempty"`
	// Attempts counts the job's claims (each names a new VM).
	Attempts int   `json:"attempts,omitempty"`
	RunnerID int64 `json:"runnerId,omitempty"`
	// RunnerGone: the provider said (its completed event named the runner)
	// that the job's runner ran it, and removes that runner itself (a
	// just-in-time runner runs one job): nobody removes it again.
	RunnerGone bool       `json:"runnerGone,omitempty"`
	Message    string     `json:"message,omitempty"`
	Conclusion string     `json:"conclusion,omitempty"`
	QueuedAt   time.Time  `json:"queuedAt"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	DoneAt     *time.Time `json:"doneAt,omitempty"`
}

func (j *RunnerJob) sortKey() string { return runnerJobKey(j.Namespace, j.Pool, j.ID) }

func (j *RunnerJob) clone() *RunnerJob {
	c := *j
	c.Labels = slices.Clone(j.Labels)
	return &c
}

func runnerJobKey(ns, pool string, id int64) string {
	return ns + "/" + pool + "/" + strconv.FormatInt(id, 10)
}

// RunnerJobUpdate records a job or moves it on. A job is created queued
// (once: the provider's job id is its key, so a webhook and a poll that
// both see it make one job). A job moves only forward, but for starting
// back to queued (its VM could not be placed); starting needs the VM's
// name, and a job has at most one VM: a claim of a job that is no longer
// queued is refused, so two leaders cannot both start it.
//
// ByVM addresses the job that holds that VM now, whichever it is: the
// leader starting a VM speaks of the VM, since GitHub may have moved it to
// another job meanwhile (RunnerJobRan).
type RunnerJobUpdate struct {
	Job  RunnerJob `json:"job"`
	ByVM string    `json:"byVM,omitempty"`
	// Requeue moves a starting job back to queued (its VM could not be
	// made; Job.Message says why); with RunnerEnded, a running one too (its
	// runner ended without a job).
	Requeue     bool      `json:"requeue,omitempty"`
	RunnerEnded bool      `json:"runnerEnded,omitempty"`
	Time        time.Time `json:"time"`
}

func (s *State) applyRunnerJobUpdate(c RunnerJobUpdate) (any, error) {
	in := c.Job
	if _, ok := s.RunnerPools[key(in.Namespace, in.Pool)]; !ok {
		return nil, ruleErr(ErrNotFound, "runner pool %q not found", in.Pool)
	}
	if c.ByVM != "" {
		h := s.runnerJobHolding(in.Namespace, in.Pool, c.ByVM)
		if h == nil {
			return nil, ruleErr(ErrNotFound, "no job of pool %q holds VM %s", in.Pool, c.ByVM)
		}
		in.ID, in.VM = h.ID, c.ByVM
	}
	if in.ID <= 0 {
		return nil, ruleErr(ErrInvalid, "a job needs its provider's id")
	}
	if _, ok := runnerJobOrder[in.State]; !ok {
		return nil, ruleErr(ErrInvalid, "job state %q", in.State)
	}
	if len(in.Message) > MaxJobMessage {
		in.Message = in.Message[:MaxJobMessage]
	}
	k := runnerJobKey(in.Namespace, in.Pool, in.ID)
	j, ok := s.RunnerJobs[k]
	if !ok {
		if in.State != RunnerJobQueued {
			return nil, ruleErr(ErrNotFound, "job %d of pool %q not found", in.ID, in.Pool)
		}
		if n := s.countRunnerJobs(in.Namespace, in.Pool); n >= MaxRunnerJobs {
			return nil, ruleErr(ErrConflict, "pool %q tracks %d jobs, the most it may", in.Pool, n)
		}
		j = in.clone()
		j.VM, j.RunnerID, j.Attempts, j.StartedAt, j.DoneAt = "", 0, 0, nil, nil
		if j.QueuedAt.IsZero() {
			j.QueuedAt = c.Time
		}
		s.RunnerJobs[k] = j
		return j.clone(), nil
	}
	from, to := runnerJobOrder[j.State], runnerJobOrder[in.State]
	switch {
	case in.VM != "" && j.VM != "" && in.VM != j.VM:
		return nil, ruleErr(ErrConflict, "job %d holds VM %s now, not %s", in.ID, j.VM, in.VM)
	case c.Requeue:
		if j.State != RunnerJobStarting && !(j.State == RunnerJobRunning && c.RunnerEnded) {
			return nil, ruleErr(ErrConflict, "job %d is %s, not starting", in.ID, j.State)
		}
		j.StartedAt = nil
		j.State, j.VM, j.RunnerID, j.Message = RunnerJobQueued, "", 0, in.Message
		return j.clone(), nil
	case to < from:
		return nil, ruleErr(ErrConflict, "job %d is %s already", in.ID, j.State)
	case to == from && in.State == RunnerJobQueued:
		if in.Message != "" {
			j.Message = in.Message
		}
		return j.clone(), nil
	case in.State == RunnerJobStarting && j.State == RunnerJobStarting && in.VM == j.VM:
		// The starting leader's word on its VM (the runner's id).
	case in.State == RunnerJobStarting:
		if j.State != RunnerJobQueued {
			return nil, ruleErr(ErrConflict, "job %d is %s: it has its VM %s", in.ID, j.State, j.VM)
		}
		if in.VM == "" {
			return nil, ruleErr(ErrInvalid, "a starting job names its VM")
		}
		j.VM, j.Message = in.VM, ""
		j.Attempts++
	}
	j.State = in.State
	if in.RunnerID != 0 {
		j.RunnerID = in.RunnerID
	}
	if in.Message != "" {
		j.Message = in.Message
	}
	if in.Conclusion != "" {
		j.Conclusion = in.Conclusion
	}
	t := c.Time
	if in.State == RunnerJobRunning && j.StartedAt == nil {
		j.StartedAt = &t
	}
	if in.State == RunnerJobDone && j.DoneAt == nil {
		j.DoneAt = &t
		s.pruneRunnerJobs(in.Namespace, in.Pool)
	}
	return j.clone(), nil
}

// pruneRunnerJobs keeps the newest MaxDoneRunnerJobs done jobs of a pool.
func (s *State) pruneRunnerJobs(ns, pool string) {
	var done []*RunnerJob
	for _, j := range s.RunnerJobs {
		if j.Namespace == ns && j.Pool == pool && j.State == RunnerJobDone {
			done = append(done, j)
		}
	}
	if len(done) <= MaxDoneRunnerJobs {
		return
	}
	slices.SortFunc(done, func(a, b *RunnerJob) int { return a.DoneAt.Compare(*b.DoneAt) })
	for _, j := range done[:len(done)-MaxDoneRunnerJobs] {
		delete(s.RunnerJobs, runnerJobKey(ns, pool, j.ID))
	}
}

func runnerJobs(s *State) map[string]*RunnerJob { return s.RunnerJobs }

// RunnerJobs returns the jobs of a pool.
func (f *FSM) RunnerJobs(ns, pool string) []RunnerJob {
	return list(f, runnerJobs, func(j *RunnerJob) bool { return j.Namespace == ns && j.Pool == pool })
}

// RunnerJob returns one job of a pool.
func (f *FSM) RunnerJob(ns, pool string, id int64) (RunnerJob, bool) {
	return get(f, runnerJobs, runnerJobKey(ns, pool, id))
}

// RunnerStarts returns the p50 and p95 of the seconds from a job's queued
// event to its runner starting, over the jobs given (0 when none started).
func RunnerStarts(jobs []RunnerJob) (p50, p95 float64) {
	var d []float64
	for _, j := range jobs {
		if j.StartedAt != nil {
			d = append(d, j.StartedAt.Sub(j.QueuedAt).Seconds())
		}
	}
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	at := func(q float64) float64 { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return at(0.5), at(0.95)
}
