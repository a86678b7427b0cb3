package raftfsm

import (
	"strings"
	"time"
)

// TestInit is an Init of a cluster for tests of the state alone: its fabric
// fields hold placeholder bytes (no peer can use them), its first peer is
// "first" at 127.0.0.1.
func TestInit(clusterID string, t time.Time) Init {
	return Init{
		ClusterID: clusterID, Time: t,
		CACert: []byte("ca"), CAKey: []byte("wrapped ca key"), SigningKey: []byte("wrapped signing key"), GossipKeys: []byte("wrapped gossip keys"),
		First: PeerIdentity{Name: "first", KeyID: "sha256:" + strings.Repeat("f", 64), Addr: "127.0.0.1", RaftAddr: "127.0.0.1:7000"},
	}
}
