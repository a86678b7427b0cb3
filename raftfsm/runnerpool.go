package raftfsm

import (
	"slices"
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

func runnerPools(s *State) map[string]*RunnerPool { return s.RunnerPools }

// RunnerPools returns the pools of a namespace ("" for all), sorted.
func (f *FSM) RunnerPools(ns string) []RunnerPool {
	return list(f, runnerPools, func(p *RunnerPool) bool { return ns == "" || p.Namespace == ns })
}

// RunnerPool returns one pool.
func (f *FSM) RunnerPool(ns, name string) (RunnerPool, bool) {
	return get(f, runnerPools, key(ns, name))
}
