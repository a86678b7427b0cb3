package api

import (
	"encoding/json"
	"time"
)

// Operating a cluster: cordoned nodes, namespace quotas, VM time-to-live.

// Quota bounds what a namespace's VMs take together (PUT
// /api/v1/namespaces/{ns}/quota). A zero or absent field sets no bound;
// all zero removes the quota. Memory is in GiB, as a deploy's.
type Quota struct {
	CPU    int     `json:"cpu"`
	Memory float64 `json:"memory"`
	VMs    int     `json:"vms"`
	// Disk is GiB of the VMs' disks as their guests see them (a resize
	// counts).
	Disk float64 `json:"disk"`
}

// NamespaceQuota is a namespace's quota and what its VMs take against it
// (GET .../quota; the namespace record has both too).
type NamespaceQuota struct {
	Namespace string `json:"namespace"`
	// Quota is nil when the namespace has none.
	Quota *Quota `json:"quota"`
	Used  Quota  `json:"used"`
	// PooledDisk is the GiB of Used.Disk that the free hot guests of the
	// namespace's nodes hold (their images' size each): they give it back
	// to VMs, so no deploy is refused for them; the pools shrink instead.
	PooledDisk float64 `json:"pooledDisk,omitempty"`
}

// SharedStorage is a namespace's shared storage: on each node, a folder
// that the namespace's VMs deployed with sharedStorage see at /shared
// (mini-linux), bounded per node by MaxBytes. The body of PUT
// .../shared-storage.
type SharedStorage struct {
	MaxBytes int64 `json:"maxBytes"`
}

// NamespaceSharedStorage is the answer of GET and PUT .../shared-storage:
// the bound, and what the namespace's folder takes on each node that has
// one.
type NamespaceSharedStorage struct {
	Namespace string        `json:"namespace"`
	MaxBytes  int64         `json:"maxBytes"`
	Nodes     []SharedUsage `json:"nodes"`
}

// ExtendRequest moves a VM's expiry later (POST .../vms/{vm}/extend): by
// the duration By ("1h", "30m") from its expiry, or from now if that passed.
type ExtendRequest struct {
	By string `json:"by"`
}

// ParseTTL reads a time-to-live or an extension: a Go duration ("2h",
// "90m") of 1 s to a year.
func ParseTTL(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, invalidf("%q is not a duration such as \"2h\" or \"30m\"", s)
	}
	if d < time.Second || d > 365*24*time.Hour {
		return 0, invalidf("%s is out of range (1s to 8760h)", s)
	}
	return d, nil
}

// AuditEntry is one API write in the audit log (GET /api/v1/audit), as the
// peer that received it saw it; never its body, headers or query.
type AuditEntry struct {
	// Seq numbers the entries in the order the log took them.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Peer received the request from RemoteAddr (the client's IP).
	Peer       string `json:"peer"`
	RemoteAddr string `json:"remoteAddr"`
	// Subject is who called: "alice", "team-a:ci" (a service account),
	// "peer:p2"; empty when the request carried no valid token.
	Subject string `json:"subject,omitempty"`
	// Namespace is the namespace the path names ("" for cluster routes).
	Namespace string `json:"namespace,omitempty"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	// Code is the answer's HTTP status and Reason its text ("Forbidden";
	// empty on success).
	Code   int    `json:"code"`
	Reason string `json:"reason,omitempty"`
}

// WatchEvent is one line of a watch (GET .../vms?watch=true and the other
// lists): ADDED, MODIFIED or DELETED with the record as the list shows it
// (DELETED: as it was last), BOOKMARK with only the version reached, or
// ERROR with a Status (the stream then ends).
type WatchEvent struct {
	Type            string          `json:"type"`
	Object          json.RawMessage `json:"object,omitempty"`
	ResourceVersion string          `json:"resourceVersion"`
}
