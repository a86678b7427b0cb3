package cluster

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/oidcprovider"
	"github.com/svc-project/svc/testkit/testcluster"
)

// signIn runs a browser sign-in through peer cl as username, the browser's
// steps done as form posts.
func signIn(t *testing.T, cl *api.Client, op *oidcprovider.Provider, username, password string) (api.SignedIn, error) {
	t.Helper()
	st, back := startAt(t, cl, "corp", op, username, password)
	return cl.FinishSignIn(kit.Ctx(t), "corp", callbackOf(st, back))
}

// startAt starts a browser sign-in with provider and signs username in at
// op: the sign-in as the client started it, and where the provider sent
// the browser back to.
func startAt(t *testing.T, cl *api.Client, provider string, op *oidcprovider.Provider, username, password string) (api.SignInStart, *url.URL) {
	t.Helper()
	st, err := cl.StartSignIn(kit.Ctx(t), provider, "http://127.0.0.1:1/callback")
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	back, err := op.SignIn(kit.Ctx(t), st.AuthURL, username, password)
	if err != nil {
		t.Fatalf("sign in at the provider: %v", err)
	}
	if back.Query().Get("state") != st.State || back.Query().Get("code") == "" {
		t.Fatalf("the provider sent the browser back to %s", back)
	}
	return st, back
}

// callbackOf is what the client that started st sends with the provider's
// answer: the code, the state, the issuer where named, and its verifier.
func callbackOf(st api.SignInStart, back *url.URL) api.SignInCallback {
	q := back.Query()
	return api.SignInCallback{State: q.Get("state"), Code: q.Get("code"), Issuer: q.Get("iss"), CodeVerifier: st.CodeVerifier}
}

func TestSignIn_roles_follow_the_directory(t *testing.T) {
	op := oidcprovider.Start(t, kit.People)
	c := testcluster.New(t, 2, testcluster.Options{})
	leader := c.WaitLeader()
	admin := c.Client(leader)
	kit.SetProvider(t, admin, op)
	if _, err := admin.CreateNamespace(kit.Ctx(t), "team-dev"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddSubjects(kit.Ctx(t), "team-dev", api.Subjects{Groups: []string{"dev"}}); err != nil {
		t.Fatal(err)
	}
	follower := c.Followers()[0]
	viaFollower := api.NewClient("http://"+follower.Peer.APIAddr(), "")

	// alice signs in through a follower: a user, named by her e-mail
	// address (lowercased), with her groups; her token lasts an hour.
	alice, err := signIn(t, viaFollower, op, "alice", "alice-pw")
	if err != nil {
		t.Fatalf("alice signs in: %v", err)
	}
	if alice.User != "alice@example.com" || alice.Role != "user" || strings.Join(alice.Groups, ",") != "dev" {
		t.Fatalf("alice signed in as %+v", alice)
	}
	if left := time.Until(*alice.ExpiresAt); left < 59*time.Minute || left > time.Hour+time.Second {
		t.Fatalf("alice's token expires in %s, want 1 h", left)
	}
	asAlice := api.NewClient("http://"+follower.Peer.APIAddr(), alice.Token)
	if _, err := asAlice.ListVMs(kit.Ctx(t), "team-dev"); err != nil {
		t.Fatalf("alice in her group's namespace: %v", err)
	}
	if _, err := asAlice.ListVMs(kit.Ctx(t), kit.NS); err != nil {
		t.Fatalf("alice in svc-default: %v", err)
	}
	if _, err := admin.CreateNamespace(kit.Ctx(t), "team-ops"); err != nil {
		t.Fatal(err)
	}
	_, err = asAlice.ListVMs(kit.Ctx(t), "team-ops")
	if api.CodeOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "group") {
		t.Fatalf("alice in another namespace: %v, want 403 naming groups", err)
	}

	// bob is an admin through ops-admins: he makes a namespace.
	bob, err := signIn(t, viaFollower, op, "bob", "bob-pw")
	if err != nil || bob.Role != "admin" {
		t.Fatalf("bob signs in: %+v, %v", bob, err)
	}
	if _, err := api.NewClient("http://"+leader.Peer.APIAddr(), bob.Token).CreateNamespace(kit.Ctx(t), "bobs"); err != nil {
		t.Fatalf("bob makes a namespace: %v", err)
	}

	// alice leaves dev in the directory: at her next sign-in her namespace
	// follows, and so do the tokens she already has.
	op.SetGroups("alice", nil)
	again, err := signIn(t, viaFollower, op, "alice", "alice-pw")
	if err != nil || len(again.Groups) != 0 {
		t.Fatalf("alice signs in again: %+v, %v", again, err)
	}
	c.WaitFor("alice's groups on the follower", 10*time.Second, func() error {
		if u, _ := follower.Peer.FSM().User("alice@example.com"); len(u.Groups) != 0 {
			return fmt.Errorf("still %v", u.Groups)
		}
		return nil
	})
	for _, tok := range []string{alice.Token, again.Token} {
		_, err = api.NewClient("http://"+follower.Peer.APIAddr(), tok).ListVMs(kit.Ctx(t), "team-dev")
		if api.CodeOf(err) != http.StatusForbidden {
			t.Fatalf("alice out of dev, in team-dev: %v, want 403", err)
		}
	}

	// bob loses ops-admins: his admin token acts as a user's once he signed in again.
	op.SetGroups("bob", nil)
	if _, err := signIn(t, viaFollower, op, "bob", "bob-pw"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("bob a user on the leader", 10*time.Second, func() error {
		_, err := api.NewClient("http://"+leader.Peer.APIAddr(), bob.Token).CreateNamespace(kit.Ctx(t), "bobs-2")
		if api.CodeOf(err) == http.StatusForbidden {
			return nil
		}
		return fmt.Errorf("bob's old admin token: %v", err)
	})

	// root removes alice: her tokens are refused on every peer.
	if _, err := leader.Peer.HostAdmin().RemoveUser(kit.Ctx(t), "alice@example.com"); err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Running() {
		_, err := api.NewClient("http://"+m.Peer.APIAddr(), again.Token).ListVMs(kit.Ctx(t), kit.NS)
		if api.CodeOf(err) != http.StatusUnauthorized {
			t.Fatalf("removed alice's token on %s: %v, want 401", m.Name, err)
		}
	}
}

func TestSignIn_device_grant(t *testing.T) {
	op := oidcprovider.Start(t, kit.People)
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	kit.SetProvider(t, c.Client(m), op)
	cl := api.NewClient("http://"+m.Peer.APIAddr(), "")
	for _, tc := range []struct {
		name  string
		allow bool
		want  int
	}{
		{"approved", true, http.StatusOK},
		{"denied", false, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := cl.StartDeviceSignIn(kit.Ctx(t), "corp")
			if err != nil {
				t.Fatal(err)
			}
			if d.UserCode == "" || !strings.HasPrefix(d.VerificationURI, op.Issuer) {
				t.Fatalf("device sign-in: %+v", d)
			}
			// Not approved yet: pending.
			if got, err := cl.PollDeviceSignIn(kit.Ctx(t), "corp", d.Handle); got != nil || err != nil {
				t.Fatalf("poll before approval: %+v, %v", got, err)
			}
			if err := op.ApproveDevice(kit.Ctx(t), d.UserCode, "carol", "carol-pw", tc.allow); err != nil {
				t.Fatal(err)
			}
			var got *api.SignedIn
			deadline := time.Now().Add(time.Minute)
			for got == nil && err == nil && time.Now().Before(deadline) {
				got, err = cl.PollDeviceSignIn(kit.Ctx(t), "corp", d.Handle)
			}
			switch {
			case tc.want == http.StatusOK && (err != nil || got == nil || got.User != "carol@example.com"):
				t.Fatalf("approved: %+v, %v", got, err)
			case tc.want != http.StatusOK && api.CodeOf(err) != tc.want:
				t.Fatalf("denied: %+v, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestSignIn_bad_input_is_refused(t *testing.T) {
	op := oidcprovider.Start(t, kit.People)
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	admin := c.Client(m)
	kit.SetProvider(t, admin, op, "dev", "ops-admins")
	cl := api.NewClient("http://"+m.Peer.APIAddr(), "")
	st, err := cl.StartSignIn(kit.Ctx(t), "corp", "http://127.0.0.1:1/callback")
	if err != nil {
		t.Fatal(err)
	}
	tampered := st.State[:len(st.State)-2] + "AA"
	cases := []struct {
		name string
		call func() error
		code int
		says string
	}{
		{"an unknown provider", func() error { _, err := cl.StartSignIn(kit.Ctx(t), "nope", "http://127.0.0.1:1/cb"); return err }, 404, "no such"},
		{"a redirect off this host in plain http", func() error { _, err := cl.StartSignIn(kit.Ctx(t), "corp", "http://evil.example/cb"); return err }, 400, "loopback"},
		{"an altered state", func() error {
			_, err := cl.FinishSignIn(kit.Ctx(t), "corp", api.SignInCallback{State: tampered, Code: "x"})
			return err
		}, 400, "altered"},
		{"a code the provider never gave", func() error {
			_, err := cl.FinishSignIn(kit.Ctx(t), "corp", api.SignInCallback{State: st.State, Code: "made-up", CodeVerifier: st.CodeVerifier})
			return err
		}, 401, "refused"},
		{"a person in none of the allowed groups", func() error { _, err := signIn(t, cl, op, "carol", "carol-pw"); return err }, 403, "none of the groups"},
		{"a provider without https", func() error {
			_, err := admin.SetOIDCProvider(kit.Ctx(t), "plain", api.OIDCProviderRequest{Issuer: "http://idp.example", ClientID: "x"})
			return err
		}, 400, "https"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if api.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %d saying %q", err, tc.code, tc.says)
			}
		})
	}
	if _, ok := m.Peer.FSM().User("carol@example.com"); ok {
		t.Fatal("carol was recorded though refused")
	}
	// The secret is never answered.
	list, err := admin.ListOIDCProviders(kit.Ctx(t))
	if err != nil || len(list) != 1 || !list[0].ClientSecretSet {
		t.Fatalf("providers: %+v, %v", list, err)
	}

	// A provider that is down: a bounded 503.
	op.Close()
	start := time.Now()
	_, err = admin.SetOIDCProvider(kit.Ctx(t), "corp", api.OIDCProviderRequest{Issuer: op.Issuer + "/moved", ClientID: op.ClientID, AllowAnyone: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.StartSignIn(kit.Ctx(t), "corp", "http://127.0.0.1:1/callback")
	if api.CodeOf(err) != http.StatusServiceUnavailable || time.Since(start) > 15*time.Second {
		t.Fatalf("provider down: %v after %s, want 503 within 15 s", err, time.Since(start))
	}
}

// The peers reach a provider only where they may reach a registry: one on
// an address outside --registry-allow is refused before any connection.
func TestSignIn_provider_outside_the_egress_policy(t *testing.T) {
	op := oidcprovider.Start(t, kit.People)
	c := testcluster.New(t, 1, testcluster.Options{RegistryAllow: []string{"10.0.0.0/8"}})
	m := c.WaitLeader()
	kit.SetProvider(t, c.Client(m), op)
	_, err := api.NewClient("http://"+m.Peer.APIAddr(), "").StartSignIn(kit.Ctx(t), "corp", "http://127.0.0.1:1/callback")
	if api.CodeOf(err) != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "--registry-allow") {
		t.Fatalf("a provider on loopback with loopback not allowed: %v, want 503 naming --registry-allow", err)
	}
}

// The provider's answer alone (the redirect address: code and state, as a
// browser's history or a proxy's log keeps it), replayed by another
// client, gets 401 and no token; an answer redeemed once redeems nothing
// again; one sign-in's state with another's code gets 401.
func TestSignIn_the_answer_alone_redeems_nothing(t *testing.T) {
	op := oidcprovider.Start(t, kit.People)
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	kit.SetProvider(t, c.Client(m), op)
	cl := api.NewClient("http://"+m.Peer.APIAddr(), "")

	st, back := startAt(t, cl, "corp", op, "alice", "alice-pw")
	replay := callbackOf(st, back)
	replay.CodeVerifier = "" // another client has the address, not the verifier
	if got, err := cl.FinishSignIn(kit.Ctx(t), "corp", replay); api.CodeOf(err) != http.StatusUnauthorized || got.Token != "" {
		t.Fatalf("the answer replayed without the verifier: %+v %v, want 401", got, err)
	}
	st, back = startAt(t, cl, "corp", op, "alice", "alice-pw")
	if _, err := cl.FinishSignIn(kit.Ctx(t), "corp", callbackOf(st, back)); err != nil {
		t.Fatalf("the client that started it: %v", err)
	}
	if got, err := cl.FinishSignIn(kit.Ctx(t), "corp", callbackOf(st, back)); api.CodeOf(err) != http.StatusUnauthorized || got.Token != "" {
		t.Fatalf("the same answer again: %+v %v, want 401", got, err)
	}
	st1, _ := startAt(t, cl, "corp", op, "alice", "alice-pw")
	st2, back2 := startAt(t, cl, "corp", op, "bob", "bob-pw")
	mixed := callbackOf(st1, back2)
	mixed.State = st1.State
	if got, err := cl.FinishSignIn(kit.Ctx(t), "corp", mixed); api.CodeOf(err) != http.StatusUnauthorized || got.Token != "" {
		t.Fatalf("one sign-in's state with another's code: %+v %v, want 401", got, err)
	}
	if st2.State == st1.State {
		t.Fatal("two sign-ins share a state")
	}
}

// Two providers whose people share an e-mail address: the second person
// is refused with a message naming the conflict, the first keeps their
// name and bindings, and the users list shows who each is (issuer and
// subject).
func TestSignIn_two_providers_one_email(t *testing.T) {
	op := oidcprovider.Start(t, kit.People)
	other := oidcprovider.Start(t, []oidcprovider.User{{Username: "mallory", Password: "m-pw", Email: "alice@example.com", Groups: []string{"dev"}}})
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	admin := c.Client(m)
	kit.SetProvider(t, admin, op)
	if _, err := admin.SetOIDCProvider(kit.Ctx(t), "other", api.OIDCProviderRequest{Issuer: other.Issuer, ClientID: other.ClientID, ClientSecret: other.ClientSecret, AllowAnyone: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddSubjects(kit.Ctx(t), kit.NS, api.Subjects{Users: []string{"alice@example.com"}}); err != nil {
		t.Fatal(err)
	}
	cl := api.NewClient("http://"+m.Peer.APIAddr(), "")
	alice, err := signIn(t, cl, op, "alice", "alice-pw")
	if err != nil {
		t.Fatal(err)
	}
	st, back := startAt(t, cl, "other", other, "mallory", "m-pw")
	got, err := cl.FinishSignIn(kit.Ctx(t), "other", callbackOf(st, back))
	if api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), "another person") || got.Token != "" {
		t.Fatalf("the second provider's alice@example.com: %+v %v, want 409", got, err)
	}
	users, err := admin.ListUsers(kit.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Name == "alice@example.com" && (u.Provider != "corp" || u.Issuer != op.Issuer || u.Subject == "") {
			t.Fatalf("alice's record: %+v", u)
		}
	}
	if rb, err := admin.ListSubjects(kit.Ctx(t), kit.NS); err != nil || !slices.Contains(rb.Users, "alice@example.com") {
		t.Fatalf("alice's binding: %+v %v", rb, err)
	}
	if _, err := api.NewClient("http://"+m.Peer.APIAddr(), alice.Token).ListVMs(kit.Ctx(t), kit.NS); err != nil {
		t.Fatalf("alice's token: %v", err)
	}
	// Her sign-in is audited under her name, not with the calls that
	// carried no token.
	c.WaitFor("alice's sign-in in the audit log", 10*time.Second, func() error {
		entries, err := admin.ListAudit(kit.Ctx(t), api.AuditFilter{Subject: "alice@example.com"})
		if err != nil {
			return err
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Path, "/auth/oidc/corp/callback") && e.Code == http.StatusOK {
				return nil
			}
		}
		return fmt.Errorf("entries %+v", entries)
	})
}

// Sign-in steps take no token, and each may reach the provider with the
// cluster's client secret: a client address that keeps trying invented
// codes is answered 429 before its requests reach the provider.
func TestSignIn_steps_are_throttled(t *testing.T) {
	op := oidcprovider.Start(t, kit.People)
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	kit.SetProvider(t, c.Client(m), op)
	cl := api.NewClient("http://"+m.Peer.APIAddr(), "")
	st, err := cl.StartSignIn(kit.Ctx(t), "corp", "http://127.0.0.1:1/callback")
	if err != nil {
		t.Fatal(err)
	}
	codes := map[int]int{}
	for i := range 40 {
		_, err := cl.FinishSignIn(kit.Ctx(t), "corp", api.SignInCallback{State: st.State, Code: fmt.Sprintf("invented-%d", i), CodeVerifier: st.CodeVerifier})
		codes[api.CodeOf(err)]++
	}
	if codes[http.StatusTooManyRequests] < 15 || codes[http.StatusOK] != 0 {
		t.Fatalf("40 invented codes answered %v", codes)
	}
}
