// Package raftfsm holds the replicated state of an svc cluster: the command
// types and their codec, the deterministic finite state machine that Raft
// applies them to (with snapshot and restore), read-only views of the state,
// and the Store that owns the *raft.Raft instance and its bolt log.
//
// A command is one type byte followed by a JSON body. The top bit of the type
// byte (FlagIgnorable) tells a peer of an older version that it may skip a
// command type it does not know; any other unknown command stops the peer,
// because applying the log partially would split the replicas.
//
// Apply never reads a clock, draws a random number or does I/O: the leader
// stamps names, times and ports into a command before it is proposed.
package raftfsm
