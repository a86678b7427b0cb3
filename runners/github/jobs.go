package github

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v88/github"
)

// Job is a workflow job as a pool sees it.
type Job struct {
	ID, RunID int64
	// Repo is the job's repository, "owner/name".
	Repo string
	// Labels are the job's runs-on labels.
	Labels []string
	// Status: queued, in_progress, completed (or waiting, requested, pending).
	Status     string
	RunnerID   int64
	RunnerName string
}

func jobOf(repo string, j *gh.WorkflowJob) Job {
	return Job{ID: j.GetID(), RunID: j.GetRunID(), Repo: repo, Labels: j.Labels, Status: j.GetStatus(),
		RunnerID: j.GetRunnerID(), RunnerName: j.GetRunnerName()}
}

// Matches reports whether a runner registered with labels can take a job
// of jobLabels: GitHub gives a job to a runner that has every one of its
// runs-on labels, compared without case. A job with no labels matches
// nothing here (it is GitHub-hosted).
func Matches(labels, jobLabels []string) bool {
	if len(jobLabels) == 0 {
		return false
	}
	for _, l := range jobLabels {
		if !slices.ContainsFunc(labels, func(p string) bool { return strings.EqualFold(p, l) }) {
			return false
		}
	}
	return true
}

// Bounds of one sweep's listing.
const (
	// MaxRepos is how many repositories of an organisation a sweep looks
	// at, at most (the list is read again every reposTTL).
	MaxRepos = 100
	// MaxRunsPerSweep bounds the runs whose jobs one sweep lists.
	MaxRunsPerSweep = 20
	reposTTL        = 10 * time.Minute
)

// sweepState is where the sweeps of a Client stand: the organisation's
// repositories, which of them the next sweep starts with, and when each
// run's jobs were last listed.
type sweepState struct {
	mu       sync.Mutex
	repos    []string
	reposAt  time.Time
	next     int
	runsSeen map[runKey]time.Time
}

type runKey struct {
	repo string
	id   int64
}

// QueuedJobs lists the jobs waiting for a runner: in the runs that wait
// (queued) and in those under way (in_progress: a run is once any of its
// jobs started, so a matrix's or a needs: chain's jobs still queued are
// there), of the scope's repository or, in turns, of its organisation's.
// The listing spends the sweep's read budget: when it runs out, what was
// found comes back with ErrReadBudget, and the next sweep goes on where
// this one stopped (the runs listed longest ago first).
func (c *Client) QueuedJobs(ctx context.Context) ([]Job, error) {
	repos, err := c.sweepRepos(ctx)
	if err != nil {
		return nil, err
	}
	st := &c.sweep
	st.mu.Lock()
	start := st.next
	st.mu.Unlock()
	var runs []runKey
	done := 0
	for i := 0; i < len(repos) && len(runs) < MaxRunsPerSweep; i++ {
		repo := repos[(start+i)%len(repos)]
		for _, status := range []string{"queued", "in_progress"} {
			ids, err := c.runs(ctx, repo, status)
			if err != nil {
				return nil, err
			}
			for _, id := range ids {
				runs = append(runs, runKey{repo, id})
			}
		}
		done++
	}
	st.mu.Lock()
	st.next = (start + done) % max(len(repos), 1)
	if st.runsSeen == nil {
		st.runsSeen = map[runKey]time.Time{}
	}
	slices.SortStableFunc(runs, func(a, b runKey) int { return st.runsSeen[a].Compare(st.runsSeen[b]) })
	st.mu.Unlock()
	var out []Job
	for _, rk := range runs[:min(len(runs), MaxRunsPerSweep)] {
		jobs, err := c.runJobs(ctx, rk)
		out = append(out, jobs...)
		if err != nil {
			return out, err
		}
		st.mu.Lock()
		st.runsSeen[rk] = time.Now()
		st.mu.Unlock()
	}
	st.mu.Lock()
	for rk, at := range st.runsSeen {
		if time.Since(at) > time.Hour {
			delete(st.runsSeen, rk)
		}
	}
	st.mu.Unlock()
	return out, nil
}

// runs lists the ids of a repository's workflow runs of a status (the
// newest 100).
func (c *Client) runs(ctx context.Context, repo, status string) ([]int64, error) {
	var runs *gh.WorkflowRuns
	err := c.call(ctx, sweepRead, func() (resp *gh.Response, err error) {
		runs, resp, err = c.gh.Actions.ListRepositoryWorkflowRuns(ctx, c.scope.Owner, repo, &gh.ListWorkflowRunsOptions{Status: status, ListOptions: gh.ListOptions{PerPage: 100}})
		return resp, err
	})
	if err != nil {
		return nil, fmt.Errorf("github: %s runs of %s/%s: %w", status, c.scope.Owner, repo, err)
	}
	var ids []int64
	for _, r := range runs.WorkflowRuns {
		ids = append(ids, r.GetID())
	}
	return ids, nil
}

// runJobs lists the queued jobs of a run: up to three pages of 100 (a
// matrix makes at most 256 jobs).
func (c *Client) runJobs(ctx context.Context, rk runKey) ([]Job, error) {
	var out []Job
	opts := &gh.ListWorkflowJobsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for range 3 {
		var jobs *gh.Jobs
		var resp *gh.Response
		err := c.call(ctx, sweepRead, func() (r *gh.Response, err error) {
			jobs, resp, err = c.gh.Actions.ListWorkflowJobs(ctx, c.scope.Owner, rk.repo, rk.id, opts)
			return resp, err
		})
		if err != nil {
			return out, fmt.Errorf("github: jobs of run %d of %s/%s: %w", rk.id, c.scope.Owner, rk.repo, err)
		}
		for _, j := range jobs.Jobs {
			if j.GetStatus() == "queued" {
				out = append(out, jobOf(c.scope.Owner+"/"+rk.repo, j))
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return out, nil
}

// sweepRepos returns the repositories a sweep looks at: the scope's one,
// or the organisation's (not archived, at most MaxRepos), read again every
// reposTTL.
func (c *Client) sweepRepos(ctx context.Context) ([]string, error) {
	if c.scope.Repo != "" {
		return []string{c.scope.Repo}, nil
	}
	st := &c.sweep
	st.mu.Lock()
	if st.repos != nil && time.Since(st.reposAt) < reposTTL {
		defer st.mu.Unlock()
		return st.repos, nil
	}
	st.mu.Unlock()
	var names []string
	opts := &gh.RepositoryListByOrgOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for len(names) < MaxRepos {
		var repos []*gh.Repository
		var resp *gh.Response
		err := c.call(ctx, sweepRead, func() (r *gh.Response, err error) {
			repos, resp, err = c.gh.Repositories.ListByOrg(ctx, c.scope.Owner, opts)
			return resp, err
		})
		if err != nil {
			return nil, fmt.Errorf("github: repositories of %s: %w", c.scope.Owner, err)
		}
		for _, r := range repos {
			if len(names) < MaxRepos && !r.GetArchived() {
				names = append(names, r.GetName())
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.repos, st.reposAt = names, time.Now()
	return names, nil
}

// JobState reads one job of a repository ("owner/name"): its status and
// conclusion (the fallback when a completed delivery was lost).
func (c *Client) JobState(ctx context.Context, repo string, id int64) (Job, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok {
		return Job{}, "", fmt.Errorf("github: %q is not owner/name", repo)
	}
	var j *gh.WorkflowJob
	err := c.call(ctx, sweepRead, func() (resp *gh.Response, err error) {
		j, resp, err = c.gh.Actions.GetWorkflowJobByID(ctx, owner, name, id)
		return resp, err
	})
	if err != nil {
		return Job{}, "", fmt.Errorf("github: job %d of %s: %w", id, repo, err)
	}
	return jobOf(repo, j), j.GetConclusion(), nil
}
