// Package runnerpool runs the cluster's runner pools on the leader: for
// every GitHub Actions job queued with labels a pool has, it claims the job
// in the replicated state (naming its VM: one VM per job, whichever leader
// does it), asks GitHub for a just-in-time runner configuration, deploys
// the VM from the pool's VM config, starts the runner in the guest through
// its agent, and deletes the VM (and the runner) once the job is done.
//
// Jobs arrive by webhook (the API records them) and, when a delivery was
// lost, by a sweep of GitHub's queued jobs at a bounded rate; a job whose
// completed delivery was lost is found by asking GitHub for the jobs that
// run. The pool acts through the cluster's own API as its service account
// (runner-<pool>), so its VMs get the placement, quotas, cordons and ttl of
// any deploy. GitHub gives a job to any idle runner of matching labels:
// the records follow it (raftfsm.RunnerJobRan), so every waiting job keeps
// one VM on its way. After a leader change the new leader takes over where
// the state says: a job left starting loses its half-made VM and is queued
// again (unless its runner runs a job already); a runner that ended before
// taking a job is replaced; VMs of the pool that no job names are deleted.
package runnerpool
