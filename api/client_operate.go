package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// CordonNode takes a node out of placement (it keeps its VMs).
func (c *Client) CordonNode(ctx context.Context, namespace, node string) (Node, error) {
	var out Node
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "nodes", node, "cordon"), struct{}{}, &out)
	return out, err
}

// UncordonNode puts a cordoned node back into placement.
func (c *Client) UncordonNode(ctx context.Context, namespace, node string) (Node, error) {
	var out Node
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "nodes", node, "uncordon"), struct{}{}, &out)
	return out, err
}

// GetQuota returns a namespace's quota and use.
func (c *Client) GetQuota(ctx context.Context, namespace string) (NamespaceQuota, error) {
	var out NamespaceQuota
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "quota"), nil, &out)
	return out, err
}

// SetQuota sets a namespace's quota (all zero removes it).
func (c *Client) SetQuota(ctx context.Context, namespace string, q Quota) (NamespaceQuota, error) {
	var out NamespaceQuota
	err := c.Do(ctx, http.MethodPut, nsPath(namespace, "quota"), q, &out)
	return out, err
}

// ExtendVM moves a VM's expiry later by by ("1h").
func (c *Client) ExtendVM(ctx context.Context, namespace, vm, by string) (VM, error) {
	var out VM
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "vms", vm, "extend"), ExtendRequest{By: by}, &out)
	return out, err
}

// AuditFilter selects audit entries (empty fields select all).
type AuditFilter struct {
	Namespace, Subject string
	// Since is a time (RFC 3339) or a duration back from now ("1h").
	Since string
	Limit int
}

// ListAudit reads the audit log (admin), oldest first.
func (c *Client) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	q := url.Values{}
	for k, v := range map[string]string{"namespace": f.Namespace, "subject": f.Subject, "since": f.Since} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	path := "/api/v1/audit"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out List[AuditEntry]
	err := c.Do(ctx, http.MethodGet, path, nil, &out)
	return out.Items, err
}
