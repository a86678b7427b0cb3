// Package snapshots takes and restores copies of the cluster's replicated
// state for operators: a snapshot file (package backup) streamed from this
// peer's Raft snapshot, and a restore that checks a whole uploaded file
// before the leader installs it on every peer. The API serves it
// (GET and POST /api/v1/cluster/snapshot); svc agent --restore forms a new
// cluster from a file (form.go).
package snapshots
