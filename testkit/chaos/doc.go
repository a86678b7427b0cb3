// Package chaos tests a cluster of real svc agents the way a hostile network
// and a careless operator would. It runs the agents in network namespaces
// (scripts/local-cluster.sh, VMs on the fake hypervisor), drives them with
// concurrent clients through random peers while a nemesis kills (-9),
// restarts, pauses (SIGSTOP) and partitions (nft, both ways or one way)
// peers, records every operation with its invocation and completion times,
// and checks the history: linearizable (porcupine), no acknowledged write
// lost, no stale state served by a peer that restarted; and it measures how
// long writes were unavailable after each kind of fault.
package chaos
