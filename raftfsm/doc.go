// Package raftfsm holds the replicated state of an svc cluster: the command
// types and their codec, the deterministic finite state machine that Raft
// applies them to (with snapshot and restore), and read-only views of the
// state. Package raftstore runs Raft over it.
//
// Each resource has one file holding its record type, its command bodies,
// their apply functions and its views: cluster.go (init, certificate,
// signing key), node.go, namespace.go, auth.go (users, service accounts,
// role bindings), vm.go, vmconfig.go, vm_imageop.go (commit, save), image.go
// (images and ISOs), blob.go, registry.go (credentials), job.go, catalog.go.
// The machinery is apart: command.go (types and codec), commands.go (the
// command table: one entry per type gives its name, the resource it
// changes, whether a peer may propose it and for which node, and its apply
// function), proposer.go (those owner checks), fsm.go (Raft's FSM, snapshots, waiting), state.go, index.go
// (derived indexes), records.go (generic views), notify.go (wake-ups),
// errors.go.
//
// A command is one type byte followed by a JSON body. The top bit of the type
// byte (FlagIgnorable) tells a peer of an older version that it may skip a
// command type it does not know; any other unknown command stops the peer,
// because applying the log partially would split the replicas.
//
// Apply never reads a clock, draws a random number or does I/O: the leader
// stamps names, times and ports into a command before it is proposed.
package raftfsm
