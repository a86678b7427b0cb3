package raftbench

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/testkit/poll"
)

// Cluster is n Raft stores that bootstrapped one cluster.
type Cluster struct {
	// Stores are the stores, the leader first.
	Stores []*raftstore.Store
	// Server and Client are, per store, TLS 1.3 configs with its
	// certificate that accept only the cluster's CA's (nil on plain TCP):
	// for other traffic between the same peers.
	Server, Client []*tls.Config
}

// Leader returns the store that leads (it led when Start returned).
func (c *Cluster) Leader() *raftstore.Store { return c.Stores[0] }

// Start starts n stores on loopback with svc's production timings, each
// with its own FSM, and waits for a leader; they close when tb ends.
// With tls, every Raft connection is mutually authenticated TLS from a CA
// of the cluster's own, as svc's fabric.
func Start(tb testing.TB, n int, tls bool) *Cluster {
	tb.Helper()
	c := &Cluster{Stores: make([]*raftstore.Store, n)}
	var peerTLS []*raftstore.PeerTLS
	if tls {
		peerTLS, c.Server, c.Client = issue(tb, n)
	}
	servers := make([]raftstore.Server, n)
	for i := range c.Stores {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		cfg := raftstore.StoreConfig{ID: fmt.Sprintf("s%d", i), DataDir: tb.TempDir(), Listener: ln}
		if peerTLS != nil {
			cfg.TLS = peerTLS[i]
		}
		s, err := raftstore.OpenStore(cfg, raftfsm.NewFSM(nil))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = s.Close(false) })
		c.Stores[i] = s
		servers[i] = raftstore.Server{ID: s.ID(), Address: s.Addr(), Voter: true}
	}
	for _, s := range c.Stores {
		if err := s.BootstrapCluster(servers); err != nil {
			tb.Fatal(err)
		}
	}
	poll.For(tb, "a leader among the benchmark's stores", 30*time.Second, func() error {
		for i, s := range c.Stores {
			if s.IsLeader() {
				c.Stores[0], c.Stores[i] = c.Stores[i], c.Stores[0]
				if c.Server != nil {
					c.Server[0], c.Server[i] = c.Server[i], c.Server[0]
					c.Client[0], c.Client[i] = c.Client[i], c.Client[0]
				}
				return nil
			}
		}
		return fmt.Errorf("no store leads yet")
	})
	return c
}

// issue makes a CA and a certificate per store (127.0.0.1), and returns
// the stores' Raft TLS and, per store, server and client configs.
func issue(tb testing.TB, n int) ([]*raftstore.PeerTLS, []*tls.Config, []*tls.Config) {
	tb.Helper()
	now := time.Now()
	caDER, caKey, err := fabric.NewCA("raftbench", now)
	if err != nil {
		tb.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	never := make(chan struct{}) // the members never change
	var (
		peers           []*raftstore.PeerTLS
		servers, client []*tls.Config
	)
	for i := range n {
		key, err := fabric.NewKey()
		if err != nil {
			tb.Fatal(err)
		}
		der, err := fabric.Issue(ca, caKey, fmt.Sprintf("s%d", i), []net.IP{net.IPv4(127, 0, 0, 1)}, key.Public(), now, 24*time.Hour)
		if err != nil {
			tb.Fatal(err)
		}
		cert := []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}
		s := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: cert, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
		c := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: cert, RootCAs: pool, ServerName: "127.0.0.1"}
		servers, client = append(servers, s), append(client, c)
		peers = append(peers, &raftstore.PeerTLS{
			Server: s, Client: c,
			Check:   func(*tls.ConnectionState) error { return nil },
			Changed: func() <-chan struct{} { return never },
		})
	}
	return peers, servers, client
}
