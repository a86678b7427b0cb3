package cluster

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/oidcnode"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestSignIn_a_certified_provider_with_its_defaults: a second provider
// implementation (Node.js oidc-provider, certified), set up as the common
// ones are by default: its ID token names only the subject (e-mail and
// groups come from UserInfo), its client must authenticate at the device
// endpoint, and its answers name their issuer. A browser sign-in and a
// device sign-in both work, groups make roles, and the redirect address
// alone redeems nothing.
func TestSignIn_a_certified_provider_with_its_defaults(t *testing.T) {
	op := oidcnode.Start(t, []oidcnode.Person{
		{Username: "alice", Email: "alice@corp.example", Groups: []string{"dev"}},
		{Username: "bob", Email: "bob@corp.example", Groups: []string{"ops-admins"}},
		{Username: "carol", Email: "carol@corp.example"},
	})
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	if _, err := c.Client(m).SetOIDCProvider(kit.Ctx(t), "node", api.OIDCProviderRequest{
		Issuer: op.Issuer, ClientID: op.ClientID, ClientSecret: op.ClientSecret, Scopes: []string{"openid", "email", "profile", "groups"},
		AdminGroups: []string{"ops-admins"}, AllowedGroups: []string{"dev"},
	}); err != nil {
		t.Fatal(err)
	}
	cl := api.NewClient("http://"+m.Peer.APIAddr(), "")
	start := func(username string) (api.SignInStart, api.SignInCallback) {
		t.Helper()
		st, err := cl.StartSignIn(kit.Ctx(t), "node", "http://127.0.0.1:1/callback")
		if err != nil {
			t.Fatal(err)
		}
		back, err := op.SignIn(kit.Ctx(t), st.AuthURL, username)
		if err != nil {
			t.Fatalf("%s at the provider: %v", username, err)
		}
		q := back.Query()
		if q.Get("iss") != op.Issuer || q.Get("state") != st.State {
			t.Fatalf("the provider sent the browser back to %s", back)
		}
		return st, api.SignInCallback{State: q.Get("state"), Code: q.Get("code"), Issuer: q.Get("iss"), CodeVerifier: st.CodeVerifier}
	}

	// the redirect address alone, then the client that started it
	_, cb := start("alice")
	alone := cb
	alone.CodeVerifier = ""
	if got, err := cl.FinishSignIn(kit.Ctx(t), "node", alone); api.CodeOf(err) != http.StatusUnauthorized || got.Token != "" {
		t.Fatalf("the answer alone: %+v %v", got, err)
	}
	_, cb = start("alice")
	alice, err := cl.FinishSignIn(kit.Ctx(t), "node", cb)
	if err != nil || alice.User != "alice@corp.example" || alice.Role != "user" || strings.Join(alice.Groups, ",") != "dev" {
		t.Fatalf("alice, her claims from UserInfo: %+v %v", alice, err)
	}
	_, cb = start("carol")
	if _, err := cl.FinishSignIn(kit.Ctx(t), "node", cb); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("carol, in no allowed group: %v", err)
	}

	// the device grant, the client authenticating at the device endpoint
	d, err := cl.StartDeviceSignIn(kit.Ctx(t), "node")
	if err != nil {
		t.Fatalf("device start (a confidential client): %v", err)
	}
	if err := op.ApproveDevice(kit.Ctx(t), d.UserCode, "bob", true); err != nil {
		t.Fatal(err)
	}
	var bob *api.SignedIn
	deadline := time.Now().Add(time.Minute)
	for bob == nil && err == nil && time.Now().Before(deadline) {
		bob, err = cl.PollDeviceSignIn(kit.Ctx(t), "node", d.Handle)
	}
	if err != nil || bob == nil || bob.User != "bob@corp.example" || bob.Role != "admin" {
		t.Fatalf("bob by device: %+v %v", bob, err)
	}
	users, err := c.Client(m).ListUsers(kit.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Provider == "node" && (u.Issuer != op.Issuer || u.Subject == "") {
			t.Fatalf("user %+v", u)
		}
	}
}
