// Package node is the svc peer. It wires the roles of a peer together and
// owns what is the peer's own: it opens the Raft store and the gossip pool,
// serves the API, joins or bootstraps the cluster, catches its replica up
// before it serves, mints tokens (and serves the admin socket), reports the
// host's health and keeps guests from the cluster's ports. The roles live
// in packages of their own, each given only what it uses:
//
//   - node/host: the VM host agent (reconciler, VM workers, commit/save);
//   - node/jobs: registry jobs, remote catalogs, deploy references;
//   - node/leader: the leader's loops and VM placement.
//
// Peer serves the API's small interfaces (httpapi's Replica, Consensus,
// Readiness and Peers); the roles serve the others.
package node
