// Package host is the VM host agent of a peer: the reconciler that keeps
// this node's domains in step with the VMs the replicated state places on
// it, a worker per VM that converges its domain (create, start, stop,
// suspend, revert, recreate what vanished), and the image operations
// (commit, save) carried out on a VM's disk. It reads the replica, drives
// the hypervisor and reports through the leader; it knows nothing of Raft,
// gossip or the API.
package host
