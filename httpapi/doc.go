// Package httpapi serves the svc REST API (/api/v1) and /metrics on every
// peer. Reads come from the local replica (or through the leader with
// ?consistent=true); writes are forwarded to the Raft leader when this peer
// is not it, and the leader's answer is passed back unchanged. Every error is
// a JSON Status body.
package httpapi
