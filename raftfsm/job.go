package raftfsm

import (
	"slices"
	"time"

	"github.com/svc-project/svc/api"
)

// Job kinds and states.
const (
	JobPush  = "push"
	JobPull  = "pull"
	JobCache = "cache"

	JobPending   = "Pending"
	JobRunning   = "Running"
	JobSucceeded = "Succeeded"
	JobFailed    = "Failed"
)

// Job is a push or pull a peer carries out, or a copy of an image to
// several nodes (a cache job), which each of its targets carries out.
type Job struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Type      string `json:"type"`
	// Node is the peer that carries it out ("" for a cache job).
	Node string `json:"node"`
	// Targets are the nodes a cache job copies the image to, each with its
	// own progress; the job's state and bytes add theirs up.
	Targets []JobTarget `json:"targets,omitempty"`
	// Reference is the registry reference pushed to or pulled from.
	Reference string `json:"reference"`
	// VM is the VM a push sends; Image the image (or ISO, Kind) a push
	// sends or a pull makes.
	VM    string `json:"vm,omitempty"`
	Image string `json:"image,omitempty"`
	Kind  string `json:"kind,omitempty"`

	State          string     `json:"state"`
	BytesDone      int64      `json:"bytesDone"`
	BytesTotal     int64      `json:"bytesTotal"`
	Message        string     `json:"message,omitempty"`
	StartTime      time.Time  `json:"startTime"`
	CompletionTime *time.Time `json:"completionTime,omitempty"`
	Owner          string     `json:"owner,omitempty"`
	// StoppedVM records that a push stopped its running VM to read the
	// disk: a run after a crash starts the VM again only then.
	StoppedVM bool `json:"stoppedVM,omitempty"`
	// CreateIndex is the log index of its creation: the order jobs queued
	// for a peer run in (StartTime has whole seconds).
	CreateIndex uint64 `json:"createIndex,omitempty"`
}

// Ended tells whether the job is over.
func (j *Job) Ended() bool { return j.State == JobSucceeded || j.State == JobFailed }

func (j *Job) clone() *Job {
	out := *j
	out.Targets = slices.Clone(j.Targets)
	if j.CompletionTime != nil {
		t := *j.CompletionTime
		out.CompletionTime = &t
	}
	return &out
}

func (j *Job) sortKey() string { return key(j.Namespace, j.Name) }

// MaxOpenJobs is how many jobs that have not ended a namespace may have: a
// member cannot queue work without bound on the peers.
const MaxOpenJobs = 64

// JobCreate records a new job, Pending on its node.
type JobCreate struct {
	Job Job `json:"job"`
}

// JobUpdate reports a job's progress or end from the peer that runs it (or
// from the leader for a job whose peer is gone).
type JobUpdate struct {
	Namespace  string    `json:"namespace"`
	Name       string    `json:"name"`
	State      string    `json:"state"`
	BytesDone  int64     `json:"bytesDone"`
	BytesTotal int64     `json:"bytesTotal"`
	Message    string    `json:"message,omitempty"`
	Time       time.Time `json:"time"`
	// StoppedVM, once sent, stays set on the job.
	StoppedVM bool `json:"stoppedVM,omitempty"`
	// Target, for a cache job, is the node whose part this reports.
	Target string `json:"target,omitempty"`
}

// JobDelete forgets an ended job (the leader's clean-up).
type JobDelete struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (s *State) applyJobCreate(index uint64, c JobCreate) (any, error) {
	j := c.Job.clone()
	j.CreateIndex = index
	if err := api.ValidateName("job name", j.Name, api.MaxNameLen); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if j.Type != JobPush && j.Type != JobPull && j.Type != JobCache {
		return nil, ruleErr(ErrInvalid, "job type %q is not push, pull or cache", j.Type)
	}
	if _, ok := s.Namespaces[j.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", j.Namespace)
	}
	if j.Type == JobCache {
		if err := s.checkTargets(j); err != nil {
			return nil, err
		}
	} else if _, ok := s.Nodes[j.Node]; !ok {
		return nil, ruleErr(ErrNotFound, "node %q not found", j.Node)
	}
	k := key(j.Namespace, j.Name)
	if _, ok := s.Jobs[k]; ok {
		return nil, ruleErr(ErrAlreadyExists, "job %q already exists", j.Name)
	}
	open := 0
	for _, o := range s.Jobs {
		if o.Namespace == j.Namespace && !o.Ended() {
			open++
		}
	}
	if open >= MaxOpenJobs {
		return nil, ruleErr(ErrTooMany, "namespace %q has %d jobs that have not ended, the most it may have; start more once some have ended", j.Namespace, open)
	}
	j.State, j.CompletionTime = JobPending, nil
	s.Jobs[k] = j
	return j.clone(), nil
}

func (s *State) applyJobUpdate(c JobUpdate) (any, error) {
	j, ok := s.Jobs[key(c.Namespace, c.Name)]
	if !ok {
		return nil, ruleErr(ErrNotFound, "job %q not found", c.Name)
	}
	if j.Ended() {
		return nil, ruleErr(ErrConflict, "job %q has ended (%s)", c.Name, j.State)
	}
	switch c.State {
	case JobRunning, JobSucceeded, JobFailed:
	default:
		return nil, ruleErr(ErrInvalid, "job state %q", c.State)
	}
	if j.Type == JobCache {
		if err := j.updateTarget(c); err != nil {
			return nil, err
		}
		return j.clone(), nil
	}
	j.State, j.BytesDone, j.BytesTotal = c.State, c.BytesDone, c.BytesTotal
	j.Message = c.Message
	j.StoppedVM = j.StoppedVM || c.StoppedVM
	if len(j.Message) > MaxJobMessage {
		j.Message = j.Message[:MaxJobMessage]
	}
	if j.Ended() {
		t := c.Time
		j.CompletionTime = &t
	}
	return j.clone(), nil
}

func (s *State) applyJobDelete(c JobDelete) (any, error) {
	k := key(c.Namespace, c.Name)
	j, ok := s.Jobs[k]
	if !ok {
		return nil, ruleErr(ErrNotFound, "job %q not found", c.Name)
	}
	if !j.Ended() {
		return nil, ruleErr(ErrConflict, "job %q has not ended", c.Name)
	}
	delete(s.Jobs, k)
	return nil, nil
}

func jobs(s *State) map[string]*Job { return s.Jobs }

// Jobs returns the jobs of a namespace ("" for every namespace), sorted.
func (f *FSM) Jobs(ns string) []Job {
	return list(f, jobs, func(j *Job) bool { return ns == "" || j.Namespace == ns })
}

// Job returns one job.
func (f *FSM) Job(ns, name string) (Job, bool) { return get(f, jobs, key(ns, name)) }
