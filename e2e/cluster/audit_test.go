package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// The audit log names the subject and the outcome of a refused and an
// accepted write, where they came in and from where; it keeps the last N;
// only admins read it; and no token or password of any request is in the
// replicated state (every peer's, whole).
func TestAudit_writes_subjects_outcomes_no_secrets(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{AuditEntries: raftfsm.MinAuditKeep})
	c.WaitLeader()
	via := c.Followers()[0]
	adminToken, bobToken := c.Token("admin", true), c.Token("bob", false)
	admin := api.NewClient("http://"+via.Peer.APIAddr(), adminToken)
	bob := api.NewClient("http://"+via.Peer.APIAddr(), bobToken)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if _, err := admin.CreateNamespace(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.CreateNamespace(ctx, "team-b"); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("bob creates a namespace: %v", err)
	}
	const password = "hunter2-registry-secret"
	if _, err := admin.SetRegistryCredential(ctx, "team-a", api.RegistryCredentialRequest{Server: "reg.example:5000", Username: "ci", Password: password}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateServiceAccount(ctx, "team-a", "bot"); err != nil {
		t.Fatal(err)
	}
	sa, err := admin.ServiceAccountToken(ctx, "team-a", "bot", api.TokenRequest{Duration: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	vm := kit.TinyVM(t, admin, "vm1", "")

	var entries []api.AuditEntry
	c.WaitFor("the writes in the audit log", 15*time.Second, func() error {
		entries, err = admin.ListAudit(ctx, api.AuditFilter{})
		if err != nil {
			return err
		}
		if len(entries) < 6 {
			return fmt.Errorf("%d entries", len(entries))
		}
		return nil
	})
	find := func(subject, method, path string, code int) api.AuditEntry {
		t.Helper()
		for _, e := range entries {
			if e.Subject == subject && e.Method == method && e.Path == path && e.Code == code {
				return e
			}
		}
		t.Fatalf("no %s %s %s %d in:\n%+v", subject, method, path, code, entries)
		return api.AuditEntry{}
	}
	ok := find("admin", "POST", "/api/v1/namespaces", http.StatusCreated)
	refused := find("bob", "POST", "/api/v1/namespaces", http.StatusForbidden)
	if ok.Peer != via.Name || ok.RemoteAddr != "127.0.0.1" || ok.Time.IsZero() || refused.Reason != api.ReasonForbidden {
		t.Fatalf("accepted %+v, refused %+v", ok, refused)
	}
	if got, err := admin.ListAudit(ctx, api.AuditFilter{Subject: "bob"}); err != nil || len(got) != 1 {
		t.Fatalf("bob's entries: %+v %v", got, err)
	}
	if _, err := bob.ListAudit(ctx, api.AuditFilter{}); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("bob reads the audit log: %v", err)
	}

	// No token or password of any request anywhere in any peer's state;
	// the audit entries hold no VNC password either.
	secrets := []string{password, adminToken, bobToken, sa.Token}
	for _, m := range c.Members {
		state, err := m.Peer.FSM().Dump()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(state, []byte(s)) {
				t.Fatalf("%s's state holds a secret of a request (%.12s...)", m.Name, s)
			}
		}
	}
	log, _ := json.Marshal(via.Peer.FSM().Audit(raftfsm.AuditFilter{}))
	if bytes.Contains(log, []byte(vm.VNCPassword)) {
		t.Fatal("the audit log holds a VNC password")
	}

	// Bounded: the oldest go.
	for i := range raftfsm.MinAuditKeep {
		// A 503 (a leadership change under the short test timeouts) is
		// the API's "retry": sent again, at most 3 times, as a client does.
		var err error
		for range 3 {
			if _, err = admin.TagNode(ctx, api.DefaultNamespace, c.Members[0].Name, fmt.Sprintf("t%d", i%5)); api.CodeOf(err) != http.StatusServiceUnavailable {
				break
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	c.WaitFor("the log at its bound", 15*time.Second, func() error {
		entries, err = admin.ListAudit(ctx, api.AuditFilter{Limit: 100_000})
		if err != nil {
			return err
		}
		if len(entries) != raftfsm.MinAuditKeep || entries[0].Seq <= 1 || entries[0].Subject == "bob" {
			return fmt.Errorf("%d entries from %d", len(entries), entries[0].Seq)
		}
		return nil
	})
}

// TestAudit_anonymous_flood_evicts_nothing: 11,000 writes with no token
// against one peer leave the admin's earlier entries in the audit log, keep
// at most MaxAnonymousAudit of the anonymous ones, and are slowed down per
// client (429 once the client has failed too often), while a token the peer
// verified before, from the same address, is served throughout.
func TestAudit_anonymous_flood_evicts_nothing(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{AuditEntries: raftfsm.MinAuditKeep})
	m := c.Members[0]
	admin := c.Client(m)
	ctx := context.Background()
	if _, err := admin.TagNode(ctx, api.DefaultNamespace, m.Name, "before-the-flood"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the admin's write audited", 10*time.Second, func() error {
		if got, _ := admin.ListAudit(ctx, api.AuditFilter{Subject: "admin"}); len(got) == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	codes := map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 11000; i += 8 {
				resp, err := hc.Post("http://"+m.Peer.APIAddr()+"/api/v1/namespaces/svc-default/vms", "application/json", bytes.NewReader([]byte(`{"image":"x"}`)))
				if err != nil {
					t.Error(err)
					return
				}
				_ = resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	// The admin, behind the same address, goes on working meanwhile: a
	// token the peer has verified before passes the throttle.
	flooding := make(chan struct{})
	adminCalls, adminErr := 0, error(nil)
	adminDone := make(chan struct{})
	go func() {
		defer close(adminDone)
		for {
			select {
			case <-flooding:
				return
			default:
			}
			if _, err := admin.ListNodes(ctx, api.DefaultNamespace, false); err != nil {
				adminErr = err
				return
			}
			adminCalls++
		}
	}()
	wg.Wait()
	close(flooding)
	<-adminDone
	if adminErr != nil || adminCalls == 0 {
		t.Fatalf("the admin during the flood: %d calls, then %v", adminCalls, adminErr)
	}
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusUnauthorized] == 0 || codes[http.StatusUnauthorized]+codes[http.StatusTooManyRequests] != 11000 {
		t.Fatalf("answers %v", codes)
	}
	c.WaitFor("the flood's entries written", 10*time.Second, func() error {
		if seen := m.Peer.FSM().AuditAnonymousSeen(); seen != uint64(codes[http.StatusUnauthorized]) {
			return fmt.Errorf("%d anonymous entries seen, %d refused with 401", seen, codes[http.StatusUnauthorized])
		}
		return nil
	})
	got, err := admin.ListAudit(ctx, api.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	admins, anonymous := 0, 0
	for _, e := range got {
		switch e.Subject {
		case "admin":
			admins++
		case "":
			anonymous++
		}
	}
	if admins == 0 || anonymous > raftfsm.MaxAnonymousAudit {
		t.Fatalf("after the flood: %d of the admin's entries, %d anonymous ones (%v)", admins, anonymous, codes)
	}
	t.Logf("11,000 calls without a token: %v; the log keeps the admin's %d and %d anonymous entries", codes, admins, anonymous)
}
