package github

import (
	"context"
	"fmt"
	"slices"
	"strings"

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

// Matches reports whether a runner with the pool's labels can take a job:
// every runs-on label of the job is the pool's, or "self-hosted" (every
// self-hosted runner has it); GitHub compares labels without case.
func Matches(poolLabels, jobLabels []string) bool {
	if len(jobLabels) == 0 {
		return false
	}
	for _, l := range jobLabels {
		if !strings.EqualFold(l, "self-hosted") && !slices.ContainsFunc(poolLabels, func(p string) bool { return strings.EqualFold(p, l) }) {
			return false
		}
	}
	return true
}

// QueuedJobs lists the jobs waiting for a runner: of the scope's
// repository, or of up to maxRepos repositories of its organisation. It
// reads at most maxPages pages (100 items each) of every listing, so one
// sweep costs a bounded number of requests.
func (c *Client) QueuedJobs(ctx context.Context, maxPages, maxRepos int) ([]Job, error) {
	repos := []string{c.scope.Repo}
	if c.scope.Repo == "" {
		var err error
		if repos, err = c.orgRepos(ctx, maxPages, maxRepos); err != nil {
			return nil, err
		}
	}
	var out []Job
	for _, repo := range repos {
		runs, err := c.queuedRuns(ctx, repo, maxPages)
		if err != nil {
			return nil, err
		}
		for _, run := range runs {
			opts := &gh.ListWorkflowJobsOptions{ListOptions: gh.ListOptions{PerPage: 100}}
			for page := 0; page < maxPages; page++ {
				jobs, resp, err := c.gh.Actions.ListWorkflowJobs(ctx, c.scope.Owner, repo, run, opts)
				if err != nil {
					return nil, fmt.Errorf("github: jobs of run %d of %s/%s: %w", run, c.scope.Owner, repo, err)
				}
				for _, j := range jobs.Jobs {
					if j.GetStatus() == "queued" {
						out = append(out, jobOf(c.scope.Owner+"/"+repo, j))
					}
				}
				if resp.NextPage == 0 {
					break
				}
				opts.Page = resp.NextPage
			}
		}
	}
	return out, nil
}

// queuedRuns lists the ids of a repository's queued workflow runs.
func (c *Client) queuedRuns(ctx context.Context, repo string, maxPages int) ([]int64, error) {
	var ids []int64
	opts := &gh.ListWorkflowRunsOptions{Status: "queued", ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; page < maxPages; page++ {
		runs, resp, err := c.gh.Actions.ListRepositoryWorkflowRuns(ctx, c.scope.Owner, repo, opts)
		if err != nil {
			return nil, fmt.Errorf("github: queued runs of %s/%s: %w", c.scope.Owner, repo, err)
		}
		for _, r := range runs.WorkflowRuns {
			ids = append(ids, r.GetID())
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return ids, nil
}

// orgRepos lists up to max repositories of the organisation.
func (c *Client) orgRepos(ctx context.Context, maxPages, max int) ([]string, error) {
	var names []string
	opts := &gh.RepositoryListByOrgOptions{ListOptions: gh.ListOptions{PerPage: 100}}
	for page := 0; page < maxPages && len(names) < max; page++ {
		repos, resp, err := c.gh.Repositories.ListByOrg(ctx, c.scope.Owner, opts)
		if err != nil {
			return nil, fmt.Errorf("github: repositories of %s: %w", c.scope.Owner, err)
		}
		for _, r := range repos {
			if len(names) < max && !r.GetArchived() {
				names = append(names, r.GetName())
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	return names, nil
}

// JobState reads one job of a repository ("owner/name"): its status and
// conclusion (the fallback when a completed delivery was lost).
func (c *Client) JobState(ctx context.Context, repo string, id int64) (Job, string, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok {
		return Job{}, "", fmt.Errorf("github: %q is not owner/name", repo)
	}
	j, _, err := c.gh.Actions.GetWorkflowJobByID(ctx, owner, name, id)
	if err != nil {
		return Job{}, "", fmt.Errorf("github: job %d of %s: %w", id, repo, err)
	}
	return jobOf(repo, j), j.GetConclusion(), nil
}
