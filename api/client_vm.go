package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

func nsPath(namespace string, parts ...string) string {
	p := "/api/v1/namespaces/" + url.PathEscape(namespace)
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// DeployVM deploys a VM and returns it once Running.
func (c *Client) DeployVM(ctx context.Context, namespace string, req DeployRequest) (VM, error) {
	var out VM
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "vms"), req, &out)
	return out, err
}

// ListVMs lists the VMs of a namespace.
func (c *Client) ListVMs(ctx context.Context, namespace string) ([]VM, error) {
	var out List[VM]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "vms"), nil, &out)
	return out.Items, err
}

// GetVM reads one VM.
func (c *Client) GetVM(ctx context.Context, namespace, name string) (VM, error) {
	var out VM
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "vms", name), nil, &out)
	return out, err
}

// DeleteVM deletes a VM.
func (c *Client) DeleteVM(ctx context.Context, namespace, name string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(namespace, "vms", name), nil, nil)
}

// ExecVM runs start, stop, suspend, resume or revert and returns the VM once
// the action took effect.
func (c *Client) ExecVM(ctx context.Context, namespace, name, action string) (VM, error) {
	var out VM
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "vms", name, "exec"), ExecRequest{Action: action}, &out)
	return out, err
}

// CreateVMConfig creates a VM config.
func (c *Client) CreateVMConfig(ctx context.Context, namespace string, cfg VMConfig) (VMConfig, error) {
	var out VMConfig
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "vmconfigs"), cfg, &out)
	return out, err
}

// ListVMConfigs lists the VM configs of a namespace.
func (c *Client) ListVMConfigs(ctx context.Context, namespace string) ([]VMConfig, error) {
	var out List[VMConfig]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "vmconfigs"), nil, &out)
	return out.Items, err
}

// GetVMConfig reads one VM config.
func (c *Client) GetVMConfig(ctx context.Context, namespace, name string) (VMConfig, error) {
	var out VMConfig
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "vmconfigs", name), nil, &out)
	return out, err
}

// ChangeVMConfig changes a VM config's booted templates and hot pool.
func (c *Client) ChangeVMConfig(ctx context.Context, namespace, name string, change VMConfigChange) (VMConfig, error) {
	var out VMConfig
	err := c.Do(ctx, http.MethodPatch, nsPath(namespace, "vmconfigs", name), change, &out)
	return out, err
}

// SetVMConfigWarm turns a VM config's booted templates on or off.
func (c *Client) SetVMConfigWarm(ctx context.Context, namespace, name string, warm bool) (VMConfig, error) {
	var out VMConfig
	err := c.Do(ctx, http.MethodPatch, nsPath(namespace, "vmconfigs", name), VMConfigChange{Warm: &warm}, &out)
	return out, err
}

// DeleteVMConfig deletes a VM config.
func (c *Client) DeleteVMConfig(ctx context.Context, namespace, name string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(namespace, "vmconfigs", name), nil, nil)
}

// ListImages lists the images of a namespace.
func (c *Client) ListImages(ctx context.Context, namespace string) ([]Image, error) {
	var out List[Image]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "images"), nil, &out)
	return out.Items, err
}

// UploadImage streams an image of size bytes from r (never holding it in
// memory) as a raw body and returns the image record.
func (c *Client) UploadImage(ctx context.Context, namespace, name string, r io.Reader, size int64) (Image, error) {
	var out Image
	err := c.upload(ctx, nsPath(namespace, "upload", "image"), name, r, size, &out)
	return out, err
}
