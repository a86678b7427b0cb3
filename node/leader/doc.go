// Package leader is the work of the peer that leads the Raft group: it
// initialises a new cluster, keeps the Raft membership and the node
// records in step with gossip (READY, NOT READY, gone for good), fails the
// jobs of peers that went away, and places VMs (a node from the scheduler,
// ports, a name, a VNC password). It is given the Raft store's membership
// and apply calls, the gossip pool and the job manager; it serves nothing.
package leader
