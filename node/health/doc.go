// Package health says whether this node can take VMs, and keeps the
// report the peer gossips about itself current.
//
// A node takes VMs while its hypervisor answers a probe and, where the
// driver has a guard (hypervisor.GuestGuard), while its VMs are kept from
// the cluster's Raft and gossip ports. Otherwise it has a problem, which
// its gossiped report carries: the leader marks the node NOT READY and
// places no VMs on it. A Monitor probes on a ticker, gossips the report
// again when the problem changes and when the peer asks (its keyring or
// its shared storage changed), and lifts the guard on a clean stop when
// no VM is left.
package health
