package api

import (
	"context"
	"net/http"
)

// GetSharedStorage returns a namespace's shared storage (404 when it is off).
func (c *Client) GetSharedStorage(ctx context.Context, namespace string) (NamespaceSharedStorage, error) {
	var out NamespaceSharedStorage
	err := c.Do(ctx, http.MethodGet, nsPath(namespace, "shared-storage"), nil, &out)
	return out, err
}

// SetSharedStorage turns a namespace's shared storage on with a bound per
// node of maxBytes, or changes the bound.
func (c *Client) SetSharedStorage(ctx context.Context, namespace string, maxBytes int64) (NamespaceSharedStorage, error) {
	var out NamespaceSharedStorage
	err := c.Do(ctx, http.MethodPut, nsPath(namespace, "shared-storage"), SharedStorage{MaxBytes: maxBytes}, &out)
	return out, err
}

// DisableSharedStorage turns a namespace's shared storage off.
func (c *Client) DisableSharedStorage(ctx context.Context, namespace string) error {
	return c.Do(ctx, http.MethodDelete, nsPath(namespace, "shared-storage"), nil, nil)
}

// ClearSharedStorage empties a namespace's shared folder on one of its
// nodes.
func (c *Client) ClearSharedStorage(ctx context.Context, namespace, node string) (Node, error) {
	var out Node
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "nodes", node, "shared-storage", "clear"), struct{}{}, &out)
	return out, err
}
