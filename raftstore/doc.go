// Package raftstore runs the Raft instance of a peer over the replicated
// state machine of package raftfsm: the bolt log store, the file snapshots,
// the TCP transport (through the test network gate, when one is set), the
// Raft membership calls, the Prometheus metrics of both, and a follower's
// look at its leader when another voter asks it for a pre-vote.
package raftstore
