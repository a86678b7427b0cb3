package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestFabric_a_leaked_join_token_makes_a_pending_peer: a host admitted with
// a join token that does not approve on its own (what leaks when a token
// leaks) replicates the state as a non-voter, but holds no cluster secret:
// its data dir signs no token, its API answers 503 saying why, the peers'
// routes do not take it for a peer, and its node is NOT READY, so no VM
// goes there. Once an admin approves it, it fetches the secret from a peer
// and is a voter and a READY node like any other.
func TestFabric_a_leaked_join_token_makes_a_pending_peer(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	leader := c.WaitLeader()
	admin := c.Client(leader)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := c.AddPending()
	secretFile := filepath.Join(m.DataDir, "fabric", "cluster.secret")

	if _, err := admin.CreateNamespace(ctx, "after-the-join"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the pending peer replicating", 20*time.Second, func() error {
		if _, ok := m.Peer.FSM().Namespace("after-the-join"); !ok {
			return errors.New("not yet")
		}
		return nil
	})
	servers, err := leader.Peer.Store().Servers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		if s.ID == m.Name && s.Voter {
			t.Fatal("a pending peer votes")
		}
	}
	if _, err := os.Stat(secretFile); !os.IsNotExist(err) {
		t.Fatalf("a pending peer's data dir holds the cluster secret: %v", err)
	}
	if m.Peer.Membership().SigningKey() != nil {
		t.Fatal("a pending peer opens the signing key")
	}
	if _, _, err := m.Peer.HostAdmin().MintToken(ctx, "mallory", true, time.Hour); err == nil || !strings.Contains(err.Error(), "awaits an admin's approval") {
		t.Fatalf("root on a pending peer's host minted a token: %v", err)
	}
	tok := c.Token("alice", false)
	if _, err := api.NewClient("http://"+m.Peer.APIAddr(), tok).ListVMs(ctx, kit.NS); api.CodeOf(err) != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "svc node approve "+m.Name) {
		t.Fatalf("a pending peer's API: %v", err)
	}
	// over the fabric, with its certificate: not a peer for the peers' routes
	peer := &api.Client{BaseURL: m.Peer.Links().URL(leader.Name), HTTP: &http.Client{Transport: m.Peer.Links().PeerTransport()}}
	if err := peer.Do(ctx, http.MethodGet, api.TrustPath, nil, nil); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("a pending peer on a peers' route: %v", err)
	}
	nodes, err := admin.ListNodes(ctx, kit.NS, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == m.Name && (n.Phase != api.PhaseNotReady || !n.Pending || !strings.Contains(n.PhaseReason, "svc node approve "+m.Name)) {
			t.Fatalf("the pending node: %s %v %q", n.Phase, n.Pending, n.PhaseReason)
		}
	}
	if _, err := admin.DeployVM(ctx, kit.NS, api.DeployRequest{Image: "none", Node: m.Name}); api.CodeOf(err) == http.StatusCreated {
		t.Fatal("a VM was placed on a pending node")
	}

	if msg, err := admin.ApproveNode(ctx, kit.NS, m.Name); err != nil || !strings.Contains(msg.Message, "approved") {
		t.Fatalf("approve: %+v %v", msg, err)
	}
	c.WaitFor("the approved peer READY and voting", 30*time.Second, func() error {
		if testcluster.NodePhase(leader, m.Name) != api.PhaseReady {
			return fmt.Errorf("phase %s", testcluster.NodePhase(leader, m.Name))
		}
		servers, err := leader.Peer.Store().Servers(ctx)
		if err != nil {
			return err
		}
		for _, s := range servers {
			if s.ID == m.Name && s.Voter {
				return nil
			}
		}
		return errors.New("not a voter")
	})
	if _, err := os.Stat(secretFile); err != nil {
		t.Fatalf("the approved peer keeps no cluster secret: %v", err)
	}
	if _, _, err := m.Peer.HostAdmin().MintToken(ctx, "bob", false, time.Hour); err != nil {
		t.Fatalf("root on the approved peer's host: %v", err)
	}
	if _, err := api.NewClient("http://"+m.Peer.APIAddr(), tok).ListVMs(ctx, kit.NS); err != nil {
		t.Fatalf("the approved peer's API: %v", err)
	}
}
