// Package jobs carries out a peer's registry work: the push and pull jobs
// the leader records and this peer runs (at most MaxJobs at once, progress
// reported through the leader), the leader's side of them (naming a job
// and choosing its peer, failing the jobs of peers that went away), the
// remote catalogs, the registry references a deploy names, and pulling the
// disk of a VM deployed from one. It reads the replica and the blob store
// and talks to registries within the egress policy; it knows nothing of
// Raft, gossip or the API.
package jobs
