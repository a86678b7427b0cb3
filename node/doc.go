// Package node is the svc peer: it wires the Raft store, the gossip layer and
// the HTTP API together, joins or bootstraps the cluster, and runs the
// leader's loops that turn gossip into Raft membership (voters and
// non-voters) and into READY / NOT READY transitions of node records.
package node
