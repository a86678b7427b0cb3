package httpapi

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/raftfsm"
)

// openRoutes are the only routes that need no token.
var openRoutes = map[string]bool{
	"GET /api/v1/cluster-info": true,
	// The Kubernetes-style version, as an API server answers it to anyone.
	"GET /version": true,
	"GET /metrics": true,
	// The API's description and the explorer, where a token is pasted.
	"GET /api/v1/openapi.json":  true,
	"GET /api/v1/swagger":       true,
	"GET /api/v1/swagger/*file": true,
	// The web UI\'s page and files: it signs in with a pasted token.
	"GET /ui":       true,
	"GET /ui/*file": true,
	// The cluster's CA certificate: public, for clients that verify HTTPS.
	"GET /api/v1/cluster/ca": true,
	// Signing in through an OpenID Connect provider: how a person gets a token.
	"GET /api/v1/auth/signin":                       true,
	"POST /api/v1/auth/oidc/:provider/start":        true,
	"POST /api/v1/auth/oidc/:provider/callback":     true,
	"POST /api/v1/auth/oidc/:provider/device":       true,
	"POST /api/v1/auth/oidc/:provider/device/token": true,
	// GitHub's deliveries to a runner pool: signed with the pool's secret.
	"POST /api/v1/namespaces/:namespace/runnerpools/:pool/webhook": true,
}

// signedRoutes are open routes whose caller proves itself by a signature of
// the body, not a token: unsigned, every caller is refused with 401.
var signedRoutes = map[string]bool{
	"POST /api/v1/namespaces/:namespace/runnerpools/:pool/webhook": true,
}

// TestAuthz_matrix walks every route of the router for every kind of caller
// and checks the answer's class (401, 403 or let through) and that a denied
// call changed nothing. A new route gets checked without being listed here.
func TestAuthz_matrix(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	// Each call gets a fresh state: an admin's call really changes it.
	fresh := func(t *testing.T) (*fakeBackend, http.Handler) {
		b := newFakeBackend(t, true)
		ctx := context.Background()
		for _, c := range []struct {
			t    raftfsm.Type
			body any
		}{
			{raftfsm.TypeNamespaceCreate, raftfsm.NamespaceCreate{Name: "team-a", Time: now}},
			{raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: "bob", Time: now.Add(-time.Hour)}},
			{raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: "gone", Time: now.Add(-time.Hour)}},
			{raftfsm.TypeUserRemove, raftfsm.UserRemove{Name: "gone"}},
			{raftfsm.TypeRoleBindingAdd, raftfsm.RoleBindingChange{Namespace: "team-a", Users: []string{"alice"}, Time: now.Add(-time.Hour)}},
			{raftfsm.TypeSACreate, raftfsm.SACreate{Namespace: api.DefaultNamespace, Name: "ci", Time: now.Add(-time.Hour)}},
			{raftfsm.TypeSACreate, raftfsm.SACreate{Namespace: "team-a", Name: "bot", Time: now.Add(-time.Hour)}},
			{raftfsm.TypeSACreate, raftfsm.SACreate{Namespace: "team-a", Name: "old", Time: now.Add(-time.Hour)}},
			{raftfsm.TypeSADelete, raftfsm.SADelete{Namespace: "team-a", Name: "old"}},
		} {
			if _, err := b.applyAny(ctx, c.t, c.body); err != nil {
				t.Fatal(err)
			}
		}
		return b, New(fakeConfig(b, Config{})).Handler()
	}
	s := New(fakeConfig(newFakeBackend(t, true), Config{}))
	// Every fresh state is built alike, so one tells the subjects' UIDs.
	ref, _ := fresh(t)
	sign := func(seed []byte, p auth.Principal, ttl time.Duration, at time.Time) string {
		switch p.Kind {
		case auth.KindUser:
			u, _ := ref.fsm.User(p.Name)
			p.UID = u.UID
		case auth.KindServiceAccount:
			sa, _ := ref.fsm.ServiceAccount(p.Namespace, p.Name)
			p.UID = sa.UID
		}
		tok, _, err := auth.Sign(seed, "c", p, ttl, at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	user := func(n, role string) auth.Principal { return auth.Principal{Kind: auth.KindUser, Name: n, Role: role} }
	otherKey := bytes.Repeat([]byte{9}, 32)
	type caller struct {
		name  string
		token string
		kind  string // "bad" (401 on any closed route), "admin", "member" (bound to team-a), "stranger", "peer"
		// peer names the caller as a peer over the fake's fabric (see
		// fakeBackend.PeerOf): the only way a peer route lets one in.
		peer string
	}
	callers := []caller{
		{"no token", "", "bad", ""},
		{"malformed", "not-a-token", "bad", ""},
		{"bad signature", sign(otherKey, user("root", auth.RoleAdmin), time.Hour, now), "bad", ""},
		{"expired", sign(testSeed, user("alice", auth.RoleUser), time.Hour, now.Add(-2*time.Hour)), "bad", ""},
		{"deleted service account", sign(testSeed, auth.Principal{Kind: auth.KindServiceAccount, Name: "old", Namespace: "team-a"}, 0, now), "bad", ""},
		{"removed user", sign(testSeed, user("gone", auth.RoleUser), time.Hour, now), "bad", ""},
		{"service account of another namespace", sign(testSeed, auth.Principal{Kind: auth.KindServiceAccount, Name: "ci", Namespace: api.DefaultNamespace}, 0, now), "stranger", ""},
		{"user not bound", sign(testSeed, user("bob", auth.RoleUser), time.Hour, now), "stranger", ""},
		{"user bound", sign(testSeed, user("alice", auth.RoleUser), time.Hour, now), "member", ""},
		{"service account bound", sign(testSeed, auth.Principal{Kind: auth.KindServiceAccount, Name: "bot", Namespace: "team-a"}, 0, now), "member", ""},
		{"admin", sign(testSeed, user("root", auth.RoleAdmin), time.Hour, now), "admin", ""},
		{"peer token", sign(testSeed, auth.Principal{Kind: auth.KindPeer, Name: "n2"}, 10*time.Minute, now), "bad", ""},
		{"peer over the fabric", "", "peer", "n2"},
		{"admin's token over the fabric", sign(testSeed, user("root", auth.RoleAdmin), time.Hour, now), "admin", "n2"},
	}
	fill := strings.NewReplacer(":group", "orka.macstadium.com", ":version", "v1", ":resource", "virtualmachineinstances", ":namespace", "team-a", ":name", "n1", ":vmconfig", "c1", ":vm", "vm1",
		":serviceaccount", "bot", ":id", "0123456789abcdef", ":image", "i1", ":iso", "iso1", ":registry", "reg.example:5000", ":job", "push-vm1-abcde", ":remoteimage", "tiny-v1", ":remoteiso", "boot-v1", ":digest", "sha256:"+strings.Repeat("0", 64))
	for _, rt := range s.Routes() {
		id := rt.Method + " " + rt.Path
		if rt.Rule == RuleOpen && !openRoutes[id] {
			t.Errorf("%s is open to anyone; give it a rule (or list it in openRoutes)", id)
		}
		for _, c := range callers {
			t.Run(id+"/"+c.name, func(t *testing.T) {
				want := 0 // let through: anything but 401 and 403
				switch {
				case signedRoutes[id]:
					want = http.StatusUnauthorized
				case rt.Rule == RuleOpen:
				case rt.Rule == RulePeer && c.peer == "":
					want = http.StatusForbidden // no token makes a peer
				case rt.Rule == RulePeer:
				case c.kind == "bad", c.kind == "peer": // a peer with no token on a user's route
					want = http.StatusUnauthorized
				case rt.Rule == RuleAdmin && c.kind != "admin":
					want = http.StatusForbidden
				case rt.Rule == RuleMember && c.kind == "stranger" && strings.Contains(rt.Path, ":namespace"):
					// A member route of no namespace (discovery) is anyone's with a token.
					want = http.StatusForbidden
				}
				body := ""
				if rt.Method == http.MethodPost || rt.Method == http.MethodPut {
					body = "{}"
				}
				b, h := fresh(t)
				before, _ := b.fsm.Dump()
				w := doAsPeer(t, h, c.token, c.peer, rt.Method, fill.Replace(rt.Path), body)
				if want == 0 {
					if w.Code == http.StatusUnauthorized || w.Code == http.StatusForbidden {
						t.Fatalf("denied with %d: %s", w.Code, w.Body)
					}
					return
				}
				if w.Code != want {
					t.Fatalf("code %d, want %d: %s", w.Code, want, w.Body)
				}
				if after, _ := b.fsm.Dump(); !bytes.Equal(before, after) {
					t.Fatal("a denied call changed the state")
				}
			})
		}
	}
}

// The admin sees a missing namespace as 404; others get 403 whether or not it
// exists, so names do not leak.
func TestAuthz_missing_namespace(t *testing.T) {
	b := newFakeBackend(t, true)
	if _, err := b.applyAny(context.Background(), raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: "bob", Time: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	h := New(fakeConfig(b, Config{})).Handler()
	u, _ := b.fsm.User("bob")
	bob, _, _ := auth.Sign(testSeed, "c", auth.Principal{Kind: auth.KindUser, Name: "bob", Role: auth.RoleUser, UID: u.UID}, time.Hour, time.Now())
	cases := []struct {
		name, token string
		want        int
	}{
		{"admin", adminToken(t), http.StatusNotFound},
		{"user", bob, http.StatusForbidden},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if w := doAs(t, h, c.token, "GET", "/api/v1/namespaces/nope/vms", ""); w.Code != c.want {
				t.Fatalf("code %d, want %d: %s", w.Code, c.want, w.Body)
			}
		})
	}
	// Every user reaches svc-default.
	if w := doAs(t, h, bob, "GET", "/api/v1/namespaces/svc-default/vms", ""); w.Code != http.StatusOK {
		t.Fatalf("bob on svc-default: %d %s", w.Code, w.Body)
	}
}
