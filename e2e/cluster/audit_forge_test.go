package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestAudit_a_peer_neither_trims_nor_forges: with one peer's certificate,
// an audit append that asks the log to keep 100 entries (before, 3,253
// entries dropped to 100) trims nothing, and an entry naming a user whose
// token the peer never saw ("alice@corp.example DELETE .../prod/vms/db-1
// from 10.9.9.9", before taken as alice's) is kept with the calls that
// carried no valid token, saying which peer named whom. What users do
// through that peer is audited under their names as before.
func TestAudit_a_peer_neither_trims_nor_forges(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{AuditEntries: 1000})
	leader := c.WaitLeader()
	f := c.Followers()[0]
	admin := c.Client(f) // through the peer that will forge
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const writes = 150
	for i := range writes {
		if _, err := admin.TagNode(ctx, api.DefaultNamespace, leader.Name, fmt.Sprintf("t%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	count := func() int {
		got, err := c.Client(leader).ListAudit(ctx, api.AuditFilter{Subject: "admin", Limit: 100000})
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	c.WaitFor("the admin's writes through the follower audited as the admin's", 20*time.Second, func() error {
		if n := count(); n < writes {
			return fmt.Errorf("%d of %d", n, writes)
		}
		return nil
	})

	forged := raftfsm.AuditAppend{Keep: raftfsm.MinAuditKeep, Entries: []raftfsm.AuditEntry{{
		Time: time.Now().UTC(), Peer: f.Name, RemoteAddr: "10.9.9.9", Subject: "alice@corp.example",
		Namespace: "prod", Method: http.MethodDelete, Path: "/api/v1/namespaces/prod/vms/db-1", Code: http.StatusNoContent,
	}}}
	body, err := json.Marshal(forged)
	if err != nil {
		t.Fatal(err)
	}
	peer := &api.Client{BaseURL: f.Peer.Links().URL(leader.Name), HTTP: &http.Client{Transport: f.Peer.Links().PeerTransport()}}
	if err := peer.Do(ctx, http.MethodPost, "/api/v1/internal/apply", api.ApplyRequest{Type: byte(raftfsm.TypeAuditAppend), Body: body}, nil); err != nil {
		t.Fatalf("the peer's append: %v", err)
	}
	c.WaitFor("the forged entry written", 10*time.Second, func() error {
		all, err := c.Client(leader).ListAudit(ctx, api.AuditFilter{Limit: 100000})
		if err != nil {
			return err
		}
		for _, e := range all {
			if e.RemoteAddr == "10.9.9.9" {
				if e.Subject != "" || !strings.Contains(e.Reason, "alice@corp.example") || !strings.Contains(e.Reason, f.Name) {
					t.Fatalf("the forged entry is kept as %+v", e)
				}
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
	if got, _ := c.Client(leader).ListAudit(ctx, api.AuditFilter{Subject: "alice@corp.example"}); len(got) != 0 {
		t.Fatalf("alice's audit: %+v", got)
	}
	if n := count(); n < writes {
		t.Fatalf("the peer's append trimmed the log to %d of the admin's %d entries", n, writes)
	}
}
