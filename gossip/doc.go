// Package gossip carries each peer's report (addresses, capacity, arch,
// version, health) to every other peer with hashicorp/memberlist, and keeps
// the live view of who is alive, dead or gone. It never writes to Raft: the
// leader reads this view and turns it into commands.
package gossip
