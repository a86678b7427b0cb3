// Package netgate is the one place a peer asks whether it may talk to a
// remote address. Production peers have no gate (nil lets everything
// through); the in-process test clusters cut peers off from each other
// with one, and every way a peer reaches another (Raft, gossip, API
// forwarding, the console relay, registry jobs) asks the same gate.
package netgate
