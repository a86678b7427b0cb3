// Package fabric is the trust between the cluster's peers: the cluster's own
// certificate authority, each peer's certificate and key, the cluster secret
// that wraps the keys kept in the replicated state, join tokens, the set of
// peers the cluster has admitted (and removed), and the TLS configurations
// every byte between peers travels under (Raft, peer HTTP, the join
// handshake).
//
// A peer is its certificate: a connection from or to another peer is
// accepted only when that peer presents a certificate of the cluster's CA
// whose name and public key the cluster admitted (Trust), and never when it
// names a peer the cluster removed.
//
// The package does no Raft and no gossip of its own; node wires it to both.
package fabric
