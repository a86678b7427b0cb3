package auth

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/svc-project/svc/raftfsm"
)

type fakeState struct {
	seed  []byte
	users map[string]raftfsm.User
	sas   map[string]raftfsm.ServiceAccount
}

func (f *fakeState) Initialized() (bool, string) { return true, "c1" }
func (f *fakeState) SigningKey() []byte          { return f.seed }
func (f *fakeState) SealKey() []byte             { return f.seed }
func (f *fakeState) User(n string) (raftfsm.User, bool) {
	u, ok := f.users[n]
	return u, ok
}
func (f *fakeState) ServiceAccount(ns, n string) (raftfsm.ServiceAccount, bool) {
	sa, ok := f.sas[ns+"/"+n]
	return sa, ok
}

var t0 = time.Date(2026, 11, 21, 8, 0, 0, 0, time.UTC)

func newState() *fakeState {
	seed := make([]byte, 32)
	seed[0] = 7
	return &fakeState{
		seed: seed,
		users: map[string]raftfsm.User{
			"alice": {Name: "alice", CreatedAt: t0.Add(-time.Hour)},
			"root":  {Name: "root", Admin: true, CreatedAt: t0.Add(-time.Hour)},
			// carol was removed and named again in the second her old token was issued.
			"carol": {Name: "carol", CreatedAt: t0, UID: 9},
		},
		sas: map[string]raftfsm.ServiceAccount{
			"team-a/ci": {Name: "ci", Namespace: "team-a", CreatedAt: t0.Add(-time.Hour)},
			"team-a/cd": {Name: "cd", Namespace: "team-a", CreatedAt: t0, UID: 12},
		},
	}
}

func sign(t *testing.T, seed []byte, p Principal, ttl time.Duration, at time.Time) string {
	t.Helper()
	tok, _, err := Sign(seed, "c1", p, ttl, at)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestAuthenticate_cases(t *testing.T) {
	st := newState()
	other := make([]byte, 32)
	alice := Principal{Kind: KindUser, Name: "alice", Role: RoleUser}
	ci := Principal{Kind: KindServiceAccount, Name: "ci", Namespace: "team-a"}
	carol := func(uid uint64) Principal { return Principal{Kind: KindUser, Name: "carol", Role: RoleUser, UID: uid} }
	cd := func(uid uint64) Principal {
		return Principal{Kind: KindServiceAccount, Name: "cd", Namespace: "team-a", UID: uid}
	}
	cases := []struct {
		name    string
		header  string
		at      time.Time
		want    Principal
		wantErr error
	}{
		{name: "user", header: "Bearer " + sign(t, st.seed, alice, time.Hour, t0), at: t0.Add(time.Minute), want: alice},
		{name: "scheme is case-insensitive", header: "bearer " + sign(t, st.seed, alice, time.Hour, t0), at: t0, want: alice},
		{name: "service account without expiry", header: "Bearer " + sign(t, st.seed, ci, 0, t0), at: t0.Add(5 * 8760 * time.Hour), want: ci},
		{name: "no header", header: "", at: t0, wantErr: ErrNoToken},
		{name: "not bearer", header: "Basic YWRtaW46YWRtaW4=", at: t0, wantErr: ErrMalformed},
		{name: "garbage", header: "Bearer not.a.jwt", at: t0, wantErr: ErrMalformed},
		{name: "signed by another key", header: "Bearer " + sign(t, other, alice, time.Hour, t0), at: t0, wantErr: ErrBadSignature},
		{name: "expired", header: "Bearer " + sign(t, st.seed, alice, time.Hour, t0), at: t0.Add(time.Hour + 6*time.Second), wantErr: ErrExpired},
		{name: "expired within the leeway", header: "Bearer " + sign(t, st.seed, alice, time.Hour, t0), at: t0.Add(time.Hour + 3*time.Second), want: alice},
		{name: "issued in the future beyond the leeway", header: "Bearer " + sign(t, st.seed, alice, time.Hour, t0.Add(time.Minute)), at: t0, wantErr: ErrNotYetValid},
		{name: "issued slightly in the future", header: "Bearer " + sign(t, st.seed, alice, time.Hour, t0.Add(3*time.Second)), at: t0, want: alice},
		{name: "removed user", header: "Bearer " + sign(t, st.seed, Principal{Kind: KindUser, Name: "bob", Role: RoleUser}, time.Hour, t0), at: t0, wantErr: ErrRevoked},
		{name: "user named again after the token", header: "Bearer " + sign(t, st.seed, alice, 3*time.Hour, t0.Add(-2*time.Hour)), at: t0, wantErr: ErrRevoked},
		{name: "user of this incarnation", header: "Bearer " + sign(t, st.seed, carol(9), time.Hour, t0), at: t0, want: carol(9)},
		{name: "user's earlier incarnation in the same second", header: "Bearer " + sign(t, st.seed, carol(8), time.Hour, t0), at: t0, wantErr: ErrRevoked},
		{name: "token without uid for a user that has one", header: "Bearer " + sign(t, st.seed, carol(0), time.Hour, t0), at: t0, wantErr: ErrRevoked},
		{name: "service account of this incarnation", header: "Bearer " + sign(t, st.seed, cd(12), 0, t0), at: t0, want: cd(12)},
		{name: "service account's earlier incarnation in the same second", header: "Bearer " + sign(t, st.seed, cd(11), 0, t0), at: t0, wantErr: ErrRevoked},
		{name: "deleted service account", header: "Bearer " + sign(t, st.seed, Principal{Kind: KindServiceAccount, Name: "gone", Namespace: "team-a"}, 0, t0), at: t0, wantErr: ErrRevoked},
		{name: "peer token without expiry", header: "Bearer " + sign(t, st.seed, Principal{Kind: KindPeer, Name: "p1"}, 0, t0), at: t0, wantErr: ErrMalformed},
		{name: "peer token: peers are their certificates", header: "Bearer " + sign(t, st.seed, Principal{Kind: KindPeer, Name: "p1"}, time.Minute, t0), at: t0, wantErr: ErrMalformed},
		{name: "unknown kind", header: "Bearer " + sign(t, st.seed, Principal{Kind: "robot", Name: "r"}, time.Hour, t0), at: t0, wantErr: ErrMalformed},
	}
	a := NewAuthenticator(st, st)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := a.Authenticate(c.header, c.at)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

func TestAuthenticate_other_issuer(t *testing.T) {
	st := newState()
	a := NewAuthenticator(st, st)
	a.AddIssuer("https://idp.example", verifierFunc(func(string, time.Time) (Principal, error) {
		return Principal{Kind: KindUser, Name: "oidc-user", Role: RoleUser}, nil
	}))
	foreign := forge(t, "https://idp.example")
	got, err := a.Authenticate("Bearer "+foreign, t0)
	if err != nil || got.Name != "oidc-user" {
		t.Fatalf("got %+v %v", got, err)
	}
	if _, err := a.Authenticate("Bearer "+forge(t, "https://stranger.example"), t0); !errors.Is(err, ErrBadSignature) && !errors.Is(err, ErrUnknownIssuer) {
		t.Fatalf("a stranger's token: %v", err)
	}
}

type verifierFunc func(string, time.Time) (Principal, error)

func (f verifierFunc) Verify(tok string, now time.Time) (Principal, error) { return f(tok, now) }

// forge signs a token of another issuer with a key of its own.
func forge(t *testing.T, iss string) string {
	seed := make([]byte, 32)
	seed[1] = 9
	return signWithIssuer(t, seed, iss)
}

func FuzzAuthenticate(f *testing.F) {
	st := newState()
	tok, _, _ := Sign(st.seed, "c1", Principal{Kind: KindUser, Name: "alice", Role: RoleUser}, time.Hour, t0)
	for _, s := range []string{"Bearer " + tok, "", "Bearer ", "Bearer a.b.c", "Basic x", "Bearer " + tok[:len(tok)-3] + "abc", "Bearer eyJhbGciOiJub25lIn0.e30."} {
		f.Add(s)
	}
	a := NewAuthenticator(st, st)
	pub := ed25519.NewKeyFromSeed(st.seed).Public()
	f.Fuzz(func(t *testing.T, header string) {
		p, err := a.Authenticate(header, t0)
		if err != nil {
			return
		}
		if p.Name == "" || p.Kind == "" {
			t.Fatalf("accepted %q as %+v", header, p)
		}
		// Whatever is accepted carries the cluster's signature.
		raw, _ := BearerToken(header)
		if _, err := jwt.Parse(raw, func(*jwt.Token) (any, error) { return pub, nil }, jwt.WithoutClaimsValidation(),
			jwt.WithValidMethods([]string{"EdDSA"})); err != nil {
			t.Fatalf("accepted a token the cluster did not sign: %q: %v", header, err)
		}
	})
}

// TestAuthenticate_malformed_says_it_once: a string that is no token is
// refused with one "malformed" and what a token looks like.
func TestAuthenticate_malformed_says_it_once(t *testing.T) {
	st := newState()
	a := NewAuthenticator(st, st)
	for _, header := range []string{"Bearer abc", "Bearer not.a.jwt", "Bearer a.b.c.d"} {
		_, err := a.Authenticate(header, t0)
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%q: %v", header, err)
		}
		msg := err.Error()
		if strings.Count(strings.ToLower(msg), "malformed") != 1 || !strings.Contains(msg, "three base64url parts") {
			t.Errorf("%q: %s", header, msg)
		}
	}
}
