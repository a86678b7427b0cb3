package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/certtest"
	"github.com/svc-project/svc/testkit/testcluster"
)

func TestAuth_follower_verifies_while_the_leader_is_down(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	alice := c.Token("alice", false)
	f := c.Followers()[0]
	c.WaitFor("alice known on "+f.Name, 10*time.Second, func() error {
		if _, ok := f.Peer.FSM().User("alice"); !ok {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	c.Stop(leader)
	// Right away, with the leader gone and maybe no new one yet, the
	// follower checks the token from its own replica.
	asAlice := api.NewClient("http://"+f.Peer.APIAddr(), alice)
	if _, err := asAlice.ListNodes(kit.Ctx(t), kit.NS, false); err != nil {
		t.Fatalf("read on a follower with the leader down: %v", err)
	}
	// After the leader change, the token minted before it still works, reads and writes.
	c.WaitLeader()
	for _, m := range c.Running() {
		cl := api.NewClient("http://"+m.Peer.APIAddr(), alice)
		c.WaitFor("alice's write through "+m.Name, 15*time.Second, func() error {
			_, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "cfg-" + m.Name, Image: "none"})
			if api.CodeOf(err) == http.StatusNotFound { // authorised; only the image is missing
				return nil
			}
			return fmt.Errorf("answer: %v", err)
		})
	}
}

func TestAuth_tokens_of_removed_subjects_stop_working(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	admin := c.Client(c.Members[0])
	if _, err := admin.CreateNamespace(kit.Ctx(t), "team-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateServiceAccount(kit.Ctx(t), "team-a", "ci"); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.ServiceAccountToken(kit.Ctx(t), "team-a", "ci", api.TokenRequest{Duration: "720h"})
	if err != nil || tok.ExpiresAt == nil || time.Until(*tok.ExpiresAt) < 719*time.Hour {
		t.Fatalf("token %+v %v", tok, err)
	}
	never, err := admin.ServiceAccountToken(kit.Ctx(t), "team-a", "ci", api.TokenRequest{NoExpiration: true})
	if err != nil || never.ExpiresAt != nil {
		t.Fatalf("no-expiration token %+v %v", never, err)
	}
	for _, m := range c.Members {
		ci := api.NewClient("http://"+m.Peer.APIAddr(), tok.Token)
		c.WaitFor("the service account known on "+m.Name, 10*time.Second, func() error {
			_, err := ci.ListVMs(kit.Ctx(t), "team-a")
			return err
		})
		if _, err := ci.ListVMs(kit.Ctx(t), kit.NS); api.CodeOf(err) != http.StatusForbidden {
			t.Fatalf("service account in another namespace: %v", err)
		}
	}
	// Bound to svc-default, it reaches it too.
	if _, err := admin.AddSubjects(kit.Ctx(t), kit.NS, api.Subjects{ServiceAccounts: []string{"team-a:ci"}}); err != nil {
		t.Fatal(err)
	}
	ci := api.NewClient("http://"+c.Members[1].Peer.APIAddr(), tok.Token)
	c.WaitFor("the binding on "+c.Members[1].Name, 10*time.Second, func() error {
		_, err := ci.ListVMs(kit.Ctx(t), kit.NS)
		return err
	})
	if err := admin.DeleteServiceAccount(kit.Ctx(t), "team-a", "ci"); err != nil {
		t.Fatal(err)
	}
	// Refused at once on every peer: the delete answers once all applied it.
	for _, m := range c.Members {
		cl := api.NewClient("http://"+m.Peer.APIAddr(), never.Token)
		if _, err := cl.ListVMs(kit.Ctx(t), "team-a"); api.CodeOf(err) != http.StatusUnauthorized {
			t.Fatalf("the deleted service account's token on %s right after the delete: %v", m.Name, err)
		}
	}
	// A removed user's tokens stop working; a regular user may not do admin calls.
	bob := c.Token("bob", false)
	asBob := api.NewClient("http://"+c.Members[2].Peer.APIAddr(), bob)
	if _, err := asBob.TagNode(kit.Ctx(t), kit.NS, c.Members[0].Name, "x"); api.CodeOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "admin role") {
		t.Fatalf("bob tags a node: %v", err)
	}
	if _, err := asBob.ListVMs(kit.Ctx(t), "team-a"); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("bob in team-a: %v", err)
	}
	lagging, err := c.Members[0].Peer.HostAdmin().RemoveUser(kit.Ctx(t), "bob")
	if err != nil || len(lagging) != 0 {
		t.Fatalf("remove bob: %v (peers that did not confirm: %v)", err, lagging)
	}
	// Refused at once on every peer: the removal answers once all applied it.
	for _, m := range c.Members {
		cl := api.NewClient("http://"+m.Peer.APIAddr(), bob)
		if _, err := cl.ListVMs(kit.Ctx(t), kit.NS); api.CodeOf(err) != http.StatusUnauthorized {
			t.Fatalf("bob's token on %s right after the removal: %v", m.Name, err)
		}
	}
}

// A removal voids every token issued before it, on every peer, even when the
// user or service account is named again within the same second (tokens
// carry the subject's incarnation, not only a time of second resolution).
func TestAuth_subject_named_again_at_once_does_not_revive_old_tokens(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	admin := c.Client(leader)
	for i := range 3 {
		user, sa := fmt.Sprintf("eve-%d", i), fmt.Sprintf("bot-%d", i)
		old := c.Token(user, false)
		if _, err := leader.Peer.HostAdmin().RemoveUser(kit.Ctx(t), user); err != nil {
			t.Fatal(err)
		}
		fresh := c.Token(user, false)
		if _, err := admin.CreateServiceAccount(kit.Ctx(t), kit.NS, sa); err != nil {
			t.Fatal(err)
		}
		oldSA, err := admin.ServiceAccountToken(kit.Ctx(t), kit.NS, sa, api.TokenRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.DeleteServiceAccount(kit.Ctx(t), kit.NS, sa); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.CreateServiceAccount(kit.Ctx(t), kit.NS, sa); err != nil {
			t.Fatal(err)
		}
		freshSA, err := admin.ServiceAccountToken(kit.Ctx(t), kit.NS, sa, api.TokenRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range c.Members {
			c.WaitFor("the new subjects known on "+m.Name, 10*time.Second, func() error {
				if _, err := api.NewClient("http://"+m.Peer.APIAddr(), fresh).ListVMs(kit.Ctx(t), kit.NS); err != nil {
					return err
				}
				_, err := api.NewClient("http://"+m.Peer.APIAddr(), freshSA.Token).ListVMs(kit.Ctx(t), kit.NS)
				return err
			})
			for what, tok := range map[string]string{"user": old, "service account": oldSA.Token} {
				if _, err := api.NewClient("http://"+m.Peer.APIAddr(), tok).ListVMs(kit.Ctx(t), kit.NS); api.CodeOf(err) != http.StatusUnauthorized {
					t.Fatalf("%s: the %s's token from before the removal: %v", m.Name, what, err)
				}
			}
		}
	}
}

func TestAuth_dedicated_nodes_and_namespace_delete(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	admin := c.Client(c.Members[0])
	kit.Upload(t, admin, "tiny", kit.TinyImage(t))
	if _, err := admin.CreateNamespace(kit.Ctx(t), "team-a"); err != nil {
		t.Fatal(err)
	}
	dedicated := c.Members[1].Name
	if n, err := admin.SetNodeNamespace(kit.Ctx(t), kit.NS, dedicated, "team-a"); err != nil || n.Namespace != "team-a" {
		t.Fatalf("dedicate: %+v %v", n, err)
	}
	if nodes, _ := admin.ListNodes(kit.Ctx(t), "team-a", true); len(nodes) != 1 || nodes[0].Name != dedicated {
		t.Fatalf("team-a nodes %+v", nodes)
	}
	if nodes, _ := admin.ListNodes(kit.Ctx(t), kit.NS, true); len(nodes) != 1 || nodes[0].Name == dedicated {
		t.Fatalf("svc-default nodes %+v", nodes)
	}
	if err := admin.DeleteNamespace(kit.Ctx(t), "team-a"); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("delete with a node: %v", err)
	}
	if _, err := admin.SetNodeNamespace(kit.Ctx(t), "team-a", dedicated, kit.NS); err != nil {
		t.Fatal(err)
	}
	if err := admin.DeleteNamespace(kit.Ctx(t), "team-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.GetNamespace(kit.Ctx(t), "team-a"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("deleted namespace: %v", err)
	}
}

// selfSigned returns a PEM certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := certtest.SelfSigned("svc test", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

func uploadCert(t *testing.T, baseURL, token string, cert, key []byte) *http.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for field, data := range map[string][]byte{"cert": cert, "key": key} {
		w, _ := mw.CreateFormFile(field, field+".pem")
		_, _ = w.Write(data)
	}
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, baseURL+"/api/v1/upload/cert", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func TestAuth_https_after_cert_upload_on_every_peer(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	admin := c.Client(c.Followers()[0])
	cert, key := selfSigned(t)
	otherCert, _ := selfSigned(t)
	if resp := uploadCert(t, admin.BaseURL, admin.Token, otherCert, key); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a mismatched pair: %d", resp.StatusCode)
	}
	if resp := uploadCert(t, admin.BaseURL, c.Token("carol", false), cert, key); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a regular user uploads a cert: %d", resp.StatusCode)
	}
	if resp := uploadCert(t, admin.BaseURL, admin.Token, cert, key); resp.StatusCode != http.StatusOK {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cert)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	for _, m := range c.Members {
		cl := &api.Client{BaseURL: "https://" + m.Peer.TLSAddr(), Token: admin.Token, HTTP: hc}
		c.WaitFor("HTTPS with the uploaded certificate on "+m.Name, 15*time.Second, func() error {
			info, err := cl.ClusterInfo(kit.Ctx(t))
			if err != nil {
				return err
			}
			if info.CertData != string(cert) {
				return fmt.Errorf("certData is not the uploaded certificate")
			}
			_, err = cl.ListNodes(kit.Ctx(t), kit.NS, false)
			return err
		})
	}
}

func TestAuth_oversized_headers_and_bodies(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	admin := c.Client(m)
	req, _ := http.NewRequest(http.MethodGet, admin.BaseURL+"/api/v1/namespaces/svc-default/nodes", nil)
	req.Header.Set("Authorization", "Bearer "+admin.Token)
	req.Header.Set("X-Padding", strings.Repeat("a", 100<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("100 KiB of headers: %d", resp.StatusCode)
	}
	body := `{"name":"` + strings.Repeat("a", 2<<20) + `","image":"x"}`
	req, _ = http.NewRequest(http.MethodPost, admin.BaseURL+"/api/v1/namespaces/svc-default/vmconfigs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+admin.Token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 MiB body: %d", resp.StatusCode)
	}
}

// A user's removal answers only once every live peer has applied it: with
// one follower's Raft cut off, it waits (that follower still knows the
// user), and once the follower has the log again the removal returns and
// the follower refuses the token at once.
func TestAuth_user_removal_waits_for_every_peer(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	slow := c.Followers()[0]
	carol := api.NewClient("http://"+slow.Peer.APIAddr(), c.Token("carol", false))
	if _, err := carol.ListVMs(kit.Ctx(t), kit.NS); err != nil {
		t.Fatal(err)
	}
	c.PartitionRaft(slow)
	type result struct {
		lagging []string
		err     error
	}
	done := make(chan result, 1)
	go func() {
		lagging, err := leader.Peer.HostAdmin().RemoveUser(context.Background(), "carol")
		done <- result{lagging, err}
	}()
	c.WaitFor("the removal applied on the leader", 10*time.Second, func() error {
		if _, ok := leader.Peer.FSM().User("carol"); ok {
			return fmt.Errorf("carol is still there")
		}
		return nil
	})
	select {
	case r := <-done:
		t.Fatalf("the removal returned while a peer had not applied it: %+v", r)
	default:
	}
	if _, err := carol.ListVMs(kit.Ctx(t), kit.NS); err != nil {
		t.Fatalf("the cut-off follower refuses carol already (the test shows nothing): %v", err)
	}
	c.Heal()
	r := <-done
	if r.err != nil || len(r.lagging) != 0 {
		t.Fatalf("removal: %+v", r)
	}
	if _, err := carol.ListVMs(kit.Ctx(t), kit.NS); api.CodeOf(err) != http.StatusUnauthorized {
		t.Fatalf("carol's token on the follower right after the removal returned: %v", err)
	}
}
