// Package runnerpool runs the cluster's runner pools on the leader: for
// every GitHub Actions job queued with labels a pool's runners have
// (Labels: self-hosted, the guest's OS and architecture, the pool's own),
// it claims the job in the replicated state (naming its VM: one VM per
// job, whichever leader does it), deploys the VM from the pool's VM
// config, then asks GitHub for a just-in-time runner configuration and
// starts the runner in the guest through its agent, and deletes the VM
// (and the runner) once the job is done. A failed start backs the pool off
// (backoff.go); GitHub's rate limits are kept by runners/github.
//
// Jobs arrive by webhook (the API records them) and, when a delivery was
// lost, by a sweep of GitHub's queued and running workflow runs within a
// read budget; a job whose completed delivery was lost is found by asking
// GitHub of the jobs that run, each at most every ten sweeps. The pool acts through the cluster's own API as its service account
// (runner-<pool>), so its VMs get the placement, quotas, cordons and ttl of
// any deploy. GitHub gives a job to any idle runner of matching labels:
// the records follow it (raftfsm.RunnerJobRan), so every waiting job keeps
// one VM on its way. After a leader change the new leader takes over where
// the state says: a job left starting loses its half-made VM and is queued
// again (unless its runner runs a job already); a runner that ended before
// taking a job is replaced; VMs of the pool that no job names are deleted.
package runnerpool
