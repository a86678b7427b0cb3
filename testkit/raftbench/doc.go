// Package raftbench is what the write benchmarks are built on: a cluster
// of Raft stores on loopback (bolt logs fsync'd, production timings,
// mutual TLS or plain TCP between them), and a closed loop of concurrent
// callers that reports throughput and latency, and Raft's own timings of
// its steps (the log writes, the AppendEntries round trips, dispatch to
// commit), which say where a write's time goes. The Raft-alone figure
// (raftstore) and the floor of the API's writes (node) use the same two,
// so their figures compare.
package raftbench
