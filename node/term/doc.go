// Package term runs a peer's work as leader one Raft term at a time: when
// Raft makes the peer leader it applies the term's barrier (every entry of
// earlier terms applied to the replica, retried for as long as the term
// lasts), marks the term ready, and runs the leader's work until the term
// ends, waiting for it to stop before the next term can start. WaitReady
// tells whether this peer leads with its term's barrier applied: only then
// is its replica's index one every acknowledged write is at or below.
package term
