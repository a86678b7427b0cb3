// Package testcluster runs several svc peers in one process on loopback, with
// short Raft and gossip timeouts, and helpers to find the leader, stop,
// restart and cut peers off from each other.
package testcluster
