package api

import (
	"context"
	"net/http"
)

// ListNamespaces lists every namespace (admin).
func (c *Client) ListNamespaces(ctx context.Context) ([]Namespace, error) {
	var out List[Namespace]
	err := c.Do(ctx, http.MethodGet, "/api/v1/namespaces", nil, &out)
	return out.Items, err
}

// CreateNamespace creates a namespace (admin).
func (c *Client) CreateNamespace(ctx context.Context, name string) (Namespace, error) {
	var out Namespace
	err := c.Do(ctx, http.MethodPost, "/api/v1/namespaces", Namespace{Name: name}, &out)
	return out, err
}

// GetNamespace reads a namespace (admin).
func (c *Client) GetNamespace(ctx context.Context, name string) (Namespace, error) {
	var out Namespace
	err := c.Do(ctx, http.MethodGet, nsPath(name), nil, &out)
	return out, err
}

// DeleteNamespace deletes a namespace without VMs or nodes (admin).
func (c *Client) DeleteNamespace(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(name), nil, nil)
}

// ListSubjects lists the users and service accounts bound to a namespace.
func (c *Client) ListSubjects(ctx context.Context, namespace string) (Subjects, error) {
	var out Subjects
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "rolebindings"), nil, &out)
	return out, err
}

// AddSubjects binds users and service accounts ("ns:name") to a namespace.
func (c *Client) AddSubjects(ctx context.Context, namespace string, s Subjects) (Subjects, error) {
	var out Subjects
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "rolebindings", "add-subject"), s, &out)
	return out, err
}

// RemoveSubjects unbinds users and service accounts from a namespace.
func (c *Client) RemoveSubjects(ctx context.Context, namespace string, s Subjects) (Subjects, error) {
	var out Subjects
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "rolebindings", "remove-subject"), s, &out)
	return out, err
}

// SetNodeNamespace dedicates a node of namespace to another namespace.
func (c *Client) SetNodeNamespace(ctx context.Context, namespace, node, to string) (Node, error) {
	var out Node
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "nodes", node, "namespace"), NodeNamespaceRequest{Namespace: to}, &out)
	return out, err
}

// CreateServiceAccount creates a service account.
func (c *Client) CreateServiceAccount(ctx context.Context, namespace, name string) (ServiceAccount, error) {
	var out ServiceAccount
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "serviceaccounts", name), struct{}{}, &out)
	return out, err
}

// ListServiceAccounts lists the service accounts of a namespace.
func (c *Client) ListServiceAccounts(ctx context.Context, namespace string) ([]ServiceAccount, error) {
	var out List[ServiceAccount]
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "serviceaccounts"), nil, &out)
	return out.Items, err
}

// DeleteServiceAccount deletes a service account and voids its tokens.
func (c *Client) DeleteServiceAccount(ctx context.Context, namespace, name string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(namespace, "serviceaccounts", name), nil, nil)
}

// ServiceAccountToken makes a token for a service account.
func (c *Client) ServiceAccountToken(ctx context.Context, namespace, name string, req TokenRequest) (TokenResponse, error) {
	var out TokenResponse
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "serviceaccounts", name, "token"), req, &out)
	return out, err
}
