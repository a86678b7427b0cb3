package api

import (
	"context"
	"net/http"
)

// RemoteImage is a tag of one of the cluster's remote catalogs: an image or
// an ISO that can be pulled into a namespace.
type RemoteImage struct {
	// Name is what pull routes take; it is also the default name of the copy.
	Name string `json:"name"`
	// Type is "image" or "iso".
	Type        string `json:"type"`
	Size        string `json:"size"`
	Source      string `json:"source"`
	Description string `json:"description"`
	// Digest is the disk's content digest ("" for a containerDisk, known
	// only once pulled).
	Digest string `json:"digest,omitempty"`
}

// Remote image types.
const (
	RemoteTypeImage = "image"
	RemoteTypeISO   = "iso"
)

// PullRequest names the copy a pull makes (default: the remote's name).
type PullRequest struct {
	NewName string `json:"newName,omitempty"`
}

// RemoteCatalogs are the OCI repositories ("<registry>/<path>") whose tags
// the cluster lists as remote images and ISOs.
type RemoteCatalogs struct {
	Repositories []string `json:"repositories"`
}

// ListRemoteImages lists the remote images and ISOs a namespace can pull.
func (c *Client) ListRemoteImages(ctx context.Context, namespace string) ([]RemoteImage, error) {
	var out List[RemoteImage]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "remoteimages"), nil, &out)
	return out.Items, err
}

// PullRemoteImage copies a remote image into the namespace as a job.
func (c *Client) PullRemoteImage(ctx context.Context, namespace, name, newName string) (JobAccepted, error) {
	var out JobAccepted
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "remoteimages", name, "pull"), PullRequest{NewName: newName}, &out)
	return out, err
}

// PullRemoteISO copies a remote ISO into the namespace as a job.
func (c *Client) PullRemoteISO(ctx context.Context, namespace, name, newName string) (JobAccepted, error) {
	var out JobAccepted
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "remoteisos", name, "pull"), PullRequest{NewName: newName}, &out)
	return out, err
}

// GetRemoteCatalogs reads the cluster's remote catalogs (admin).
func (c *Client) GetRemoteCatalogs(ctx context.Context) (RemoteCatalogs, error) {
	var out RemoteCatalogs
	err := c.Do(ctx, http.MethodGet, "/api/v1/remotecatalogs", nil, &out)
	return out, err
}

// SetRemoteCatalogs replaces the cluster's remote catalogs (admin).
func (c *Client) SetRemoteCatalogs(ctx context.Context, repositories []string) (RemoteCatalogs, error) {
	var out RemoteCatalogs
	err := c.Do(ctx, http.MethodPut, "/api/v1/remotecatalogs", RemoteCatalogs{Repositories: repositories}, &out)
	return out, err
}
