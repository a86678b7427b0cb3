// Package peer is the svc peer. It wires the roles of a peer together and
// owns what is the peer's own: it opens the Raft store and the gossip pool,
// serves the API, joins or bootstraps the cluster, catches its replica up
// before it serves, and names the cluster's ports its guests must not reach.
// The roles live in packages of their own, each given only what it uses:
//
//   - node/host: the VM host agent (reconciler, VM workers, commit/save);
//   - node/jobs: registry jobs, remote catalogs, deploy references;
//   - node/leader: the leader's loops and VM placement;
//   - node/health: whether this node takes VMs, and its gossiped report;
//   - node/catchup, node/membership, node/fabric, node/standing: the
//     replica's catch-up, the peers' admission, the trust between them, and
//     this peer's standing;
//   - node/blobsource, node/blobgc, node/swarm: image blobs in and out;
//   - node/hostadmin, node/audit, node/signin: the admin socket, the audit
//     log, sign-in;
//   - node/templates, node/sharedstore, node/runnerpool: booted templates,
//     shared folders, runner pools.
//
// Peer serves the API's small interfaces (httpapi's Replica, Consensus,
// Readiness and Peers); the roles serve the others.
package peer
