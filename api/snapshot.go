package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// SnapshotPath is where a peer serves the cluster's snapshot (GET, admin)
// and takes one to restore (POST, admin).
const SnapshotPath = "/api/v1/cluster/snapshot"

// Headers of a snapshot's answer: the Raft index and term it was taken at.
const (
	HeaderSnapshotIndex = "X-Svc-Snapshot-Index"
	HeaderSnapshotTerm  = "X-Svc-Snapshot-Term"
)

// SnapshotRestored is the answer to a restore.
type SnapshotRestored struct {
	// ClusterID, Index, Term and TakenAt are the snapshot's.
	ClusterID string    `json:"clusterId"`
	Index     uint64    `json:"index"`
	Term      uint64    `json:"term"`
	TakenAt   time.Time `json:"takenAt"`
	Message   string    `json:"message"`
}

// SaveSnapshot streams a snapshot of the cluster's state (a file of the
// format package backup reads) to w, and returns the bytes written. A
// snapshot cut short fails backup's checks: keep it only when this
// returns nil.
func (c *Client) SaveSnapshot(ctx context.Context, w io.Writer) (int64, error) {
	return c.SaveSnapshotWith(ctx, w, SnapshotSaveOptions{})
}

// SnapshotSaveOptions tune a save.
type SnapshotSaveOptions struct {
	// Stale saves the state as the peer asked has applied it (?stale=true),
	// without the leader: for a cluster that has lost its majority. It may
	// lack the latest acknowledged writes.
	Stale bool
}

// SaveSnapshotWith is SaveSnapshot with options.
func (c *Client) SaveSnapshotWith(ctx context.Context, w io.Writer, opts SnapshotSaveOptions) (int64, error) {
	u := strings.TrimRight(c.BaseURL, "/") + SnapshotPath
	if opts.Stale {
		u += "?stale=true"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("build request: %w", err)
	}
	resp, err := c.stream(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("GET %s: %w", SnapshotPath, err)
	}
	return n, nil
}

// RestoreSnapshot sends a snapshot file for the cluster to take as its
// state (admin). The leader checks the whole file before it installs it.
func (c *Client) RestoreSnapshot(ctx context.Context, r io.Reader) (SnapshotRestored, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+SnapshotPath, r)
	if err != nil {
		return SnapshotRestored{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Accept", "application/json")
	resp, err := c.stream(req)
	if err != nil {
		return SnapshotRestored{}, err
	}
	defer resp.Body.Close()
	var out SnapshotRestored
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return out, fmt.Errorf("POST %s: decode answer: %w", SnapshotPath, err)
	}
	return out, nil
}
