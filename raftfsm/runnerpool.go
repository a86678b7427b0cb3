package raftfsm

import (
	"slices"
	"strconv"
	"time"

	"github.com/svc-project/svc/api"
)

// RunnerPool gives CI jobs VMs of their own: for every job a provider
// queues with labels the pool has, a VM from its VM config runs one
// just-in-time runner, and is deleted once the job is done. Its
// credentials are sealed (as registry passwords are) before they are
// proposed.
type RunnerPool struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	VMConfig  string   `json:"vmConfig"`
	Labels    []string `json:"labels"`
	Max       int      `json:"max"`
	// RunnerCommand starts the runner in the guest; {jitconfig} is
	// replaced by the job's configuration.
	RunnerCommand string `json:"runnerCommand"`
	// JobTimeout bounds a job's VM (its ttl).
	JobTimeoutSeconds int        `json:"jobTimeoutSeconds"`
	GitHub            GitHubPool `json:"github"`
	CreatedAt         time.Time  `json:"createdAt"`
}

// GitHubPool is where a pool's runners register, and how.
type GitHubPool struct {
	URL                 string `json:"url"`
	APIBase             string `json:"apiBase,omitempty"`
	AppID               int64  `json:"appId,omitempty"`
	InstallationID      int64  `json:"installationId,omitempty"`
	SealedPrivateKey    []byte `json:"sealedPrivateKey,omitempty"`
	SealedToken         []byte `json:"sealedToken,omitempty"`
	SealedWebhookSecret []byte `json:"sealedWebhookSecret,omitempty"`
	RunnerGroupID       int64  `json:"runnerGroupId,omitempty"`
}

func (p *RunnerPool) sortKey() string { return key(p.Namespace, p.Name) }

func (p *RunnerPool) clone() *RunnerPool {
	c := *p
	c.Labels = slices.Clone(p.Labels)
	c.GitHub.SealedPrivateKey = slices.Clone(p.GitHub.SealedPrivateKey)
	c.GitHub.SealedToken = slices.Clone(p.GitHub.SealedToken)
	c.GitHub.SealedWebhookSecret = slices.Clone(p.GitHub.SealedWebhookSecret)
	return &c
}

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
	// VM is the job's VM, named when the job was claimed (at most one).
	VM         string     `json:"vm,omitempty"`
	RunnerID   int64      `json:"runnerId,omitempty"`
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

// Limits of runner pools.
const (
	MaxRunnerPoolsPerNamespace = 50
	MaxRunnerPoolMax           = 1000
	MaxRunnerLabels            = 100
	// MaxDoneRunnerJobs is how many finished jobs a pool keeps listed.
	MaxDoneRunnerJobs = 200
	// MaxRunnerJobs bounds the jobs a pool tracks at once.
	MaxRunnerJobs = 10000
)

// RunnerPoolSet creates or replaces a pool.
type RunnerPoolSet struct {
	Pool RunnerPool `json:"pool"`
}

// RunnerPoolDelete removes a pool; its jobs go with it (the controller
// deletes their VMs first).
type RunnerPoolDelete struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// RunnerJobUpdate records a job or moves it on. A job is created queued
// (once: the provider's job id is its key, so a webhook and a poll that
// both see it make one job). A job moves only forward, but for starting
// back to queued (its VM could not be placed); starting needs the VM's
// name, and a job has at most one VM: a claim of a job that is no longer
// queued is refused, so two leaders cannot both start it.
type RunnerJobUpdate struct {
	Job RunnerJob `json:"job"`
	// Requeue moves a starting job back to queued (Job.Message says why).
	Requeue bool      `json:"requeue,omitempty"`
	Time    time.Time `json:"time"`
}

func (s *State) applyRunnerPoolSet(c RunnerPoolSet) (any, error) {
	p := c.Pool.clone()
	if err := api.ValidateName("runner pool", p.Name, api.MaxNameLen-16); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if _, ok := s.Namespaces[p.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", p.Namespace)
	}
	switch {
	case p.VMConfig == "":
		return nil, ruleErr(ErrInvalid, "a runner pool needs a VM config")
	case p.Max < 1 || p.Max > MaxRunnerPoolMax:
		return nil, ruleErr(ErrInvalid, "max %d: 1 to %d VMs at once", p.Max, MaxRunnerPoolMax)
	case len(p.Labels) == 0 || len(p.Labels) > MaxRunnerLabels:
		return nil, ruleErr(ErrInvalid, "1 to %d labels", MaxRunnerLabels)
	case p.GitHub.URL == "":
		return nil, ruleErr(ErrInvalid, "a runner pool needs its GitHub organisation or repository")
	case len(p.GitHub.SealedToken) == 0 && len(p.GitHub.SealedPrivateKey) == 0:
		return nil, ruleErr(ErrInvalid, "a runner pool needs GitHub credentials: an App's private key or a token")
	case len(p.GitHub.SealedWebhookSecret) == 0:
		return nil, ruleErr(ErrInvalid, "a runner pool needs a webhook secret")
	case p.JobTimeoutSeconds < 60 || p.JobTimeoutSeconds > 35*24*3600:
		return nil, ruleErr(ErrInvalid, "job timeout %ds: 1 minute to 35 days", p.JobTimeoutSeconds)
	case p.RunnerCommand == "" || len(p.RunnerCommand) > 4096:
		return nil, ruleErr(ErrInvalid, "the runner command must be 1 to 4096 bytes")
	}
	for _, l := range p.Labels {
		if err := api.ValidateTag(l); err != nil {
			return nil, ruleErr(ErrInvalid, "label: %s", err.Error())
		}
	}
	k := key(p.Namespace, p.Name)
	if _, ok := s.RunnerPools[k]; !ok {
		n := 0
		for _, o := range s.RunnerPools {
			if o.Namespace == p.Namespace {
				n++
			}
		}
		if n >= MaxRunnerPoolsPerNamespace {
			return nil, ruleErr(ErrConflict, "namespace %q has %d runner pools, the most it may have", p.Namespace, n)
		}
	}
	s.RunnerPools[k] = p
	return p.clone(), nil
}

func (s *State) applyRunnerPoolDelete(c RunnerPoolDelete) (any, error) {
	k := key(c.Namespace, c.Name)
	if _, ok := s.RunnerPools[k]; !ok {
		return nil, ruleErr(ErrNotFound, "runner pool %q not found", c.Name)
	}
	delete(s.RunnerPools, k)
	for jk, j := range s.RunnerJobs {
		if j.Namespace == c.Namespace && j.Pool == c.Name {
			delete(s.RunnerJobs, jk)
		}
	}
	return nil, nil
}

func (s *State) applyRunnerJobUpdate(c RunnerJobUpdate) (any, error) {
	in := c.Job
	if _, ok := s.RunnerPools[key(in.Namespace, in.Pool)]; !ok {
		return nil, ruleErr(ErrNotFound, "runner pool %q not found", in.Pool)
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
		n := 0
		for _, o := range s.RunnerJobs {
			if o.Namespace == in.Namespace && o.Pool == in.Pool {
				n++
			}
		}
		if n >= MaxRunnerJobs {
			return nil, ruleErr(ErrConflict, "pool %q tracks %d jobs, the most it may", in.Pool, n)
		}
		j = in.clone()
		j.VM, j.RunnerID, j.StartedAt, j.DoneAt = "", 0, nil, nil
		if j.QueuedAt.IsZero() {
			j.QueuedAt = c.Time
		}
		s.RunnerJobs[k] = j
		return j.clone(), nil
	}
	from, to := runnerJobOrder[j.State], runnerJobOrder[in.State]
	switch {
	case c.Requeue:
		if j.State != RunnerJobStarting {
			return nil, ruleErr(ErrConflict, "job %d is %s, not starting", in.ID, j.State)
		}
		j.State, j.VM, j.RunnerID, j.Message = RunnerJobQueued, "", 0, in.Message
		return j.clone(), nil
	case to < from:
		return nil, ruleErr(ErrConflict, "job %d is %s already", in.ID, j.State)
	case to == from && in.State == RunnerJobQueued:
		if in.Message != "" {
			j.Message = in.Message
		}
		return j.clone(), nil
	case in.State == RunnerJobStarting:
		if j.State != RunnerJobQueued {
			return nil, ruleErr(ErrConflict, "job %d is %s: it has its VM %s", in.ID, j.State, j.VM)
		}
		if in.VM == "" {
			return nil, ruleErr(ErrInvalid, "a starting job names its VM")
		}
		j.VM, j.Message = in.VM, ""
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

func runnerPools(s *State) map[string]*RunnerPool { return s.RunnerPools }

func runnerJobs(s *State) map[string]*RunnerJob { return s.RunnerJobs }

// RunnerPools returns the pools of a namespace ("" for all), sorted.
func (f *FSM) RunnerPools(ns string) []RunnerPool {
	return list(f, runnerPools, func(p *RunnerPool) bool { return ns == "" || p.Namespace == ns })
}

// RunnerPool returns one pool.
func (f *FSM) RunnerPool(ns, name string) (RunnerPool, bool) {
	return get(f, runnerPools, key(ns, name))
}

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
