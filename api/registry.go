package api

import (
	"context"
	"net/http"
	"time"
)

// RegistryCredentialRequest adds (or replaces) a namespace's credential for
// a registry server (host[:port]).
type RegistryCredentialRequest struct {
	Server        string `json:"server"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	AllowInsecure bool   `json:"allowInsecure"`
}

// RegistryCredential is a credential as the API shows it: never its password.
type RegistryCredential struct {
	Server        string    `json:"server"`
	Username      string    `json:"username"`
	AllowInsecure bool      `json:"allowInsecure"`
	CreatedAt     time.Time `json:"createdAt"`
}

// PushRequest names where a push goes: "<registry>/<path>[:<tag>]" (the
// tag defaults to latest).
type PushRequest struct {
	ImageReference string `json:"imageReference"`
}

// JobName answers a push: the job that carries it out.
type JobName struct {
	JobName string `json:"jobName"`
}

// JobAccepted answers a pull: the job and where to watch it.
type JobAccepted struct {
	JobName   string `json:"jobName"`
	StatusURL string `json:"statusUrl"`
}

// Job is a push or a pull.
type Job struct {
	Name           string     `json:"name"`
	Type           string     `json:"type"`
	State          string     `json:"state"`
	BytesDone      int64      `json:"bytesDone"`
	BytesTotal     int64      `json:"bytesTotal"`
	Message        string     `json:"message"`
	StartTime      time.Time  `json:"startTime"`
	CompletionTime *time.Time `json:"completionTime"`
	// Reference, VM, Image and Node say what the job moves and where it runs.
	Reference string `json:"reference"`
	VM        string `json:"vm,omitempty"`
	Image     string `json:"image,omitempty"`
	Node      string `json:"node"`
	Namespace string `json:"namespace"`
	Owner     string `json:"owner,omitempty"`
	// Targets are a cache job's nodes, each with its own copy's progress.
	Targets []JobTarget `json:"targets,omitempty"`
}

// JobTarget is one node of a cache job.
type JobTarget struct {
	Node       string `json:"node"`
	State      string `json:"state"`
	BytesDone  int64  `json:"bytesDone"`
	BytesTotal int64  `json:"bytesTotal"`
	Message    string `json:"message,omitempty"`
}

// Job states.
const (
	JobPending   = "Pending"
	JobRunning   = "Running"
	JobSucceeded = "Succeeded"
	JobFailed    = "Failed"
)

// SetRegistryCredential adds or replaces a namespace's registry credential.
func (c *Client) SetRegistryCredential(ctx context.Context, namespace string, req RegistryCredentialRequest) (RegistryCredential, error) {
	var out RegistryCredential
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "registrycredentials"), req, &out)
	return out, err
}

// ListRegistryCredentials lists a namespace's registry credentials.
func (c *Client) ListRegistryCredentials(ctx context.Context, namespace string) ([]RegistryCredential, error) {
	var out List[RegistryCredential]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "registrycredentials"), nil, &out)
	return out.Items, err
}

// DeleteRegistryCredential removes a namespace's credential for a server.
func (c *Client) DeleteRegistryCredential(ctx context.Context, namespace, server string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(namespace, "registrycredentials", server), nil, nil)
}

// PushVM pushes a VM's disk to a registry; the answer names the job.
func (c *Client) PushVM(ctx context.Context, namespace, vm, ref string) (JobName, error) {
	var out JobName
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "vms", vm, "push"), PushRequest{ImageReference: ref}, &out)
	return out, err
}

// PushImage pushes an image to a registry; the answer names the job.
func (c *Client) PushImage(ctx context.Context, namespace, image, ref string) (JobName, error) {
	var out JobName
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "images", image, "push"), PushRequest{ImageReference: ref}, &out)
	return out, err
}

// GetJob reads a job.
func (c *Client) GetJob(ctx context.Context, namespace, name string) (Job, error) {
	var out Job
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "jobs", name), nil, &out)
	return out, err
}

// ListJobs lists a namespace's jobs.
func (c *Client) ListJobs(ctx context.Context, namespace string) ([]Job, error) {
	var out List[Job]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "jobs"), nil, &out)
	return out.Items, err
}
