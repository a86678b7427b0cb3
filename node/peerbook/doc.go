// Package peerbook keeps the gossip addresses through which a peer finds
// its cluster: those it was told to join (--join), those a join token's
// answer named, and those it remembers from its last run (peers.json in
// its data dir, kept in step with the live members), so that a peer
// restarted from its data dir finds the cluster again without --join.
// It joins gossip through them, retrying with a growing pause until one
// answers or its time is up.
package peerbook
