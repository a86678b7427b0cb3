// Package follow lets a host keep the cluster's state without being a
// member of its Raft group: it follows the log through a peer that is.
//
// A Raft member (a voter, or one of the leader's bounded set of non-voting
// replicas) serves its log as a Feed: the commands it has applied from an
// index on, waiting a while for the next when there is none yet, and its
// whole state when the entries asked for were compacted. A Follower on
// another host copies the state once, then reads the Feed of one of the
// members it is given and applies each command to its own FSM in order,
// exactly as Raft would apply it there, so that every reader of the FSM
// (the API, the host's reconciler, read-your-writes by index) works on a
// following host unchanged. It keeps no log on disk: after a restart it
// copies the state again. When its source fails it moves to the next.
//
// The leader then replicates to its voters and replicas only, and the
// cost of a host beyond them falls on the replica it reads from: one long
// poll at a time, a batch of commands per answer.
package follow
