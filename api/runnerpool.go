package api

import (
	"context"
	"net/http"
	"time"
)

// RunnerPool gives CI jobs VMs of their own (GitHub Actions): for every
// queued job whose runs-on labels the pool has, a VM from VMConfig runs a
// just-in-time runner for that job alone, and is deleted when it is done.
type RunnerPool struct {
	Name          string           `json:"name"`
	Namespace     string           `json:"namespace"`
	VMConfig      string           `json:"vmConfig"`
	Labels        []string         `json:"labels"`
	Max           int              `json:"max"`
	RunnerCommand string           `json:"runnerCommand"`
	JobTimeout    string           `json:"jobTimeout"`
	GitHub        RunnerPoolGitHub `json:"github"`
	// WebhookPath is where GitHub delivers the pool's workflow_job events.
	WebhookPath string           `json:"webhookPath"`
	Status      RunnerPoolStatus `json:"status"`
	CreatedAt   time.Time        `json:"createdAt"`
}

// RunnerPoolGitHub is where the pool's runners register; secrets are
// never answered, only whether they are set.
type RunnerPoolGitHub struct {
	URL              string `json:"url"`
	APIBase          string `json:"apiBase,omitempty"`
	AppID            int64  `json:"appId,omitempty"`
	InstallationID   int64  `json:"installationId,omitempty"`
	RunnerGroupID    int64  `json:"runnerGroupId,omitempty"`
	PrivateKeySet    bool   `json:"privateKeySet"`
	TokenSet         bool   `json:"tokenSet"`
	WebhookSecretSet bool   `json:"webhookSecretSet"`
}

// RunnerPoolStatus is what a pool is doing.
type RunnerPoolStatus struct {
	Queued   int `json:"queued"`
	Starting int `json:"starting"`
	Running  int `json:"running"`
	Done     int `json:"done"`
	// VMs is how many VMs of the pool exist now (at most Max).
	VMs int `json:"vms"`
	// Waiting says why queued jobs wait, when they do.
	Waiting string `json:"waiting,omitempty"`
	// StartP50 and StartP95 are the seconds from a job's queued event to
	// its runner starting, over the jobs the pool keeps.
	StartP50 float64 `json:"startP50Seconds"`
	StartP95 float64 `json:"startP95Seconds"`
}

// RunnerPoolRequest creates or replaces a pool (admin).
type RunnerPoolRequest struct {
	Name     string   `json:"name"`
	VMConfig string   `json:"vmConfig"`
	Labels   []string `json:"labels"`
	Max      int      `json:"max"`
	// RunnerCommand starts the runner in the guest, {jitconfig} replaced by
	// the job's configuration (default: the actions runner's
	// /home/runner/run.sh --jitconfig {jitconfig}).
	RunnerCommand string `json:"runnerCommand,omitempty"`
	// JobTimeout bounds a job's VM (a Go duration; default 6h, GitHub's
	// own limit).
	JobTimeout string                  `json:"jobTimeout,omitempty"`
	GitHub     RunnerPoolGitHubRequest `json:"github"`
}

// RunnerPoolGitHubRequest is where a pool's runners register, and its
// credentials: a GitHub App (appId, installationId, privateKey in PEM) or a
// fine-grained token; webhookSecret signs the deliveries.
type RunnerPoolGitHubRequest struct {
	URL            string `json:"url"`
	APIBase        string `json:"apiBase,omitempty"`
	AppID          int64  `json:"appId,omitempty"`
	InstallationID int64  `json:"installationId,omitempty"`
	PrivateKey     string `json:"privateKey,omitempty"`
	Token          string `json:"token,omitempty"`
	WebhookSecret  string `json:"webhookSecret"`
	RunnerGroupID  int64  `json:"runnerGroupId,omitempty"`
}

// RunnerJob is a CI job a pool took.
type RunnerJob struct {
	ID         int64      `json:"id"`
	RunID      int64      `json:"runId,omitempty"`
	Repo       string     `json:"repo,omitempty"`
	Labels     []string   `json:"labels"`
	State      string     `json:"state"`
	VM         string     `json:"vm,omitempty"`
	Attempts   int        `json:"attempts,omitempty"`
	Message    string     `json:"message,omitempty"`
	Conclusion string     `json:"conclusion,omitempty"`
	QueuedAt   time.Time  `json:"queuedAt"`
	StartedAt  *time.Time `json:"startedAt,omitempty"`
	DoneAt     *time.Time `json:"doneAt,omitempty"`
}

// DefaultRunnerCommand starts GitHub's actions runner with a JIT config.
const DefaultRunnerCommand = "/home/runner/run.sh --jitconfig {jitconfig}"

// ListRunnerPools lists a namespace's pools.
func (c *Client) ListRunnerPools(ctx context.Context, namespace string) ([]RunnerPool, error) {
	var out List[RunnerPool]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "runnerpools"), nil, &out)
	return out.Items, err
}

// CreateRunnerPool creates or replaces a pool (admin).
func (c *Client) CreateRunnerPool(ctx context.Context, namespace string, req RunnerPoolRequest) (RunnerPool, error) {
	var out RunnerPool
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "runnerpools"), req, &out)
	return out, err
}

// GetRunnerPool reads a pool and its status.
func (c *Client) GetRunnerPool(ctx context.Context, namespace, name string) (RunnerPool, error) {
	var out RunnerPool
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "runnerpools", name), nil, &out)
	return out, err
}

// DeleteRunnerPool deletes a pool: its VMs go, its runners are removed.
func (c *Client) DeleteRunnerPool(ctx context.Context, namespace, name string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(namespace, "runnerpools", name), nil, nil)
}

// ListRunnerJobs lists the jobs a pool took.
func (c *Client) ListRunnerJobs(ctx context.Context, namespace, pool string) ([]RunnerJob, error) {
	var out List[RunnerJob]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "runnerpools", pool, "jobs"), nil, &out)
	return out.Items, err
}
