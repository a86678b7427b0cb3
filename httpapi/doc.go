// Package httpapi serves the svc REST API (/api/v1) and /metrics on every
// peer. Reads come from the local replica (or through the leader with
// ?consistent=true); writes are forwarded to the Raft leader when this peer
// is not it, and the leader's answer is passed back unchanged. Every error is
// a JSON Status body. It asks the peer for what its handlers need through
// small interfaces named for their use (backend.go: Replica, Consensus,
// Readiness, Peers, Placer, Jobs, Registries), one Config field each. It is
// two layers: the request layer (Server) every request goes through, and the
// handlers, one small type a resource (core.go), registered on it.
package httpapi
