// Package fsmtest stands in for a one-peer Raft in tests of the roles that
// propose commands (the leader's placement, the host, the shared folders'
// keeper): an Applier encodes each command, decodes it as the log would,
// and applies it to its replicated state machine at once.
package fsmtest
