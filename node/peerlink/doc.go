// Package peerlink is how a peer reaches the other peers of its cluster
// and knows them when they call: the fabric's TLS (this peer's certificate
// of the cluster's CA, checked against the trust set) for Raft, for HTTP
// calls between peers and on the HTTPS port, where everyone else gets the
// uploaded certificate; and where each peer is called (its address as
// gossip reports it, else as the replica recorded it).
//
// A cluster started with PlainPeers (benchmarks only) calls its peers over
// plain HTTP on their API port and names the caller in a header.
package peerlink
