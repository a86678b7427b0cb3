package api

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// JoinTokenRequest is the body of POST /api/v1/cluster/join-tokens: how
// long the token lives (a Go duration, default 24h, at most 720h) and how
// many hosts it admits (default 1).
type JoinTokenRequest struct {
	TTL  string `json:"ttl,omitempty"`
	Uses int    `json:"uses,omitempty"`
	// AutoApprove approves the hosts the token admits at once (for
	// automation); otherwise each waits pending, with no cluster secret,
	// no vote and no VMs, until an admin approves it.
	AutoApprove bool `json:"autoApprove,omitempty"`
}

// Join token states.
const (
	JoinTokenActive  = "Active"
	JoinTokenExpired = "Expired"
	JoinTokenUsedUp  = "UsedUp"
	JoinTokenRevoked = "Revoked"
)

// JoinToken is a join token's record. Token, the secret a host joins with,
// is in the answer to its creation only: the cluster keeps its hash.
type JoinToken struct {
	ID        string    `json:"id"`
	Token     string    `json:"token,omitempty"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"createdAt"`
	CreatedBy string    `json:"createdBy,omitempty"`
	ExpiresAt time.Time `json:"expiresAt"`
	Uses      int       `json:"uses"`
	Used      int       `json:"used"`
	UsedBy    []string  `json:"usedBy"`
	// AutoApprove: the hosts it admits are approved at once.
	AutoApprove bool `json:"autoApprove,omitempty"`
}

// ClusterCA is the cluster's certificate authority: what peers' HTTPS
// certificates are signed by until an admin uploads one.
type ClusterCA struct {
	// CACert is PEM; Fingerprint the hex SHA-256 of its DER bytes (what
	// join tokens carry).
	CACert      string `json:"caCert"`
	Fingerprint string `json:"fingerprint"`
}

// ClusterCA reads the cluster's CA.
func (c *Client) ClusterCA(ctx context.Context) (ClusterCA, error) {
	var out ClusterCA
	err := c.Do(ctx, http.MethodGet, "/api/v1/cluster/ca", nil, &out)
	return out, err
}

// CreateJoinToken makes a join token (admin).
func (c *Client) CreateJoinToken(ctx context.Context, req JoinTokenRequest) (JoinToken, error) {
	var out JoinToken
	err := c.Do(ctx, http.MethodPost, "/api/v1/cluster/join-tokens", req, &out)
	return out, err
}

// ListJoinTokens lists the join tokens, newest first (admin).
func (c *Client) ListJoinTokens(ctx context.Context) ([]JoinToken, error) {
	var out List[JoinToken]
	err := c.Do(ctx, http.MethodGet, "/api/v1/cluster/join-tokens", nil, &out)
	return out.Items, err
}

// RevokeJoinToken revokes a join token (admin).
func (c *Client) RevokeJoinToken(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/cluster/join-tokens/"+url.PathEscape(id), nil, nil)
}

// RotateGossipKey replaces the gossip key on every live peer (admin).
func (c *Client) RotateGossipKey(ctx context.Context) (Message, error) {
	var out Message
	err := c.Do(ctx, http.MethodPost, "/api/v1/cluster/rotate-gossip-key", nil, &out)
	return out, err
}

// ApproveNode approves a node whose peer joined pending (admin).
func (c *Client) ApproveNode(ctx context.Context, ns, name string) (Message, error) {
	var out Message
	err := c.Do(ctx, http.MethodPost, "/api/v1/namespaces/"+url.PathEscape(ns)+"/nodes/"+url.PathEscape(name)+"/approve", nil, &out)
	return out, err
}

// RemoveNode removes a node from the cluster for good (admin): its peer
// can never connect again.
func (c *Client) RemoveNode(ctx context.Context, ns, name string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/namespaces/"+url.PathEscape(ns)+"/nodes/"+url.PathEscape(name), nil, nil)
}
