package raftfsm

import (
	"slices"
	"strings"
	"testing"

	"github.com/svc-project/svc/api"
)

func TestOIDC_providers_sign_ins_and_groups(t *testing.T) {
	ns := api.DefaultNamespace
	prov := func(name, issuer string, change func(*OIDCProvider)) []byte {
		p := OIDCProvider{Name: name, Issuer: issuer, ClientID: "svc", UsernameClaim: "email", GroupsClaim: "groups", SealedClientSecret: []byte("sealed")}
		if change != nil {
			change(&p)
		}
		return mustEncode(t, TypeOIDCProviderSet, OIDCProviderSet{Provider: p})
	}
	signIn := func(user string, admin bool, groups ...string) []byte {
		return mustEncode(t, TypeUserSignIn, UserSignIn{Name: user, Admin: admin, Groups: groups, Provider: "corp", Time: t0})
	}
	var firstUID uint64
	runSteps(t, []step{
		{name: "a provider", cmd: prov("corp", "https://idp.example", nil), check: func(t *testing.T, f *FSM) {
			p, ok := f.OIDCProvider("corp")
			if !ok || p.Issuer != "https://idp.example" || string(p.SealedClientSecret) != "sealed" {
				t.Fatalf("provider %+v", p)
			}
		}},
		{name: "no issuer", cmd: prov("bad", "idp.example", nil), wantErr: ErrInvalid},
		{name: "no client id", cmd: prov("bad", "https://idp.example", func(p *OIDCProvider) { p.ClientID = "" }), wantErr: ErrInvalid},
		{name: "a bad name", cmd: prov("Bad Name", "https://idp.example", nil), wantErr: ErrInvalid},
		{name: "a control character in a group", cmd: prov("bad", "https://idp.example", func(p *OIDCProvider) { p.AdminGroups = []string{"a\nb"} }), wantErr: ErrInvalid},
		{name: "first sign-in records the user", cmd: signIn("alice@example.com", false, "dev"), check: func(t *testing.T, f *FSM) {
			u, ok := f.User("alice@example.com")
			if !ok || u.Admin || !slices.Equal(u.Groups, []string{"dev"}) || u.Provider != "corp" || u.SignedInAt == nil || u.UID == 0 {
				t.Fatalf("user %+v", u)
			}
			firstUID = u.UID
		}},
		{name: "the next replaces role and groups, keeps the UID", cmd: signIn("alice@example.com", true), check: func(t *testing.T, f *FSM) {
			u, _ := f.User("alice@example.com")
			if !u.Admin || len(u.Groups) != 0 || u.UID != firstUID {
				t.Fatalf("user %+v (first uid %d)", u, firstUID)
			}
		}},
		{name: "a sign-in through no provider", cmd: mustEncode(t, TypeUserSignIn, UserSignIn{Name: "bob", Provider: "nope", Time: t0}), wantErr: ErrNotFound},
		{name: "a name that is no user name", cmd: signIn("Bob Smith", false), wantErr: ErrInvalid},
		{name: "too many groups", cmd: signIn("bob", false, strings.Split(strings.Repeat("g,", api.MaxSignInGroups+1), ",")...), wantErr: ErrInvalid},
		{name: "bind a group", cmd: mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: ns, Groups: []string{"dev", "ops"}, Time: t0}), check: func(t *testing.T, f *FSM) {
			if rb := f.RoleBinding(ns); !slices.Equal(rb.Groups, []string{"dev", "ops"}) || !f.GroupBound([]string{"ops"}) || f.GroupBound([]string{"sales"}) {
				t.Fatalf("binding %+v", rb)
			}
		}},
		{name: "unbind one", cmd: mustEncode(t, TypeRoleBindingDel, RoleBindingChange{Namespace: ns, Groups: []string{"dev"}, Time: t0}), check: func(t *testing.T, f *FSM) {
			if rb := f.RoleBinding(ns); !slices.Equal(rb.Groups, []string{"ops"}) {
				t.Fatalf("binding %+v", rb)
			}
		}},
		{name: "remove the provider", cmd: mustEncode(t, TypeOIDCProviderDel, OIDCProviderDelete{Name: "corp"}), check: func(t *testing.T, f *FSM) {
			if len(f.OIDCProviders()) != 0 {
				t.Fatal("still there")
			}
			if _, ok := f.User("alice@example.com"); !ok {
				t.Fatal("the provider's users went with it")
			}
		}},
		{name: "remove it twice", cmd: mustEncode(t, TypeOIDCProviderDel, OIDCProviderDelete{Name: "corp"}), wantErr: ErrNotFound},
	})
}

// A person is an (issuer, subject): a second identity claiming a name
// another person holds is refused and the first keeps their record; a
// signed-in person may not take a name root on a host made (the bootstrap
// admin), nor one another provider's person holds; a record from before
// the pair was kept takes it at its person's next sign-in.
func TestUserSignIn_one_person_per_issuer_and_subject(t *testing.T) {
	prov := func(name, issuer string) []byte {
		return mustEncode(t, TypeOIDCProviderSet, OIDCProviderSet{Provider: OIDCProvider{Name: name, Issuer: issuer, ClientID: "svc", UsernameClaim: "email", GroupsClaim: "groups", AllowAnyone: true}})
	}
	signIn := func(user, provider, issuer, sub string, admin bool) []byte {
		return mustEncode(t, TypeUserSignIn, UserSignIn{Name: user, Admin: admin, Provider: provider, Issuer: issuer, Subject: sub, Time: t0})
	}
	person := func(user, issuer, sub string, admin bool) func(t *testing.T, f *FSM) {
		return func(t *testing.T, f *FSM) {
			u, ok := f.User(user)
			if !ok || u.Issuer != issuer || u.Subject != sub || u.Admin != admin {
				t.Fatalf("user %+v", u)
			}
		}
	}
	runSteps(t, []step{
		{name: "provider one", cmd: prov("corp", "https://idp.example")},
		{name: "provider two", cmd: prov("other", "https://other.example")},
		{name: "root names the admin", cmd: mustEncode(t, TypeUserUpsert, UserUpsert{Name: "admin", Admin: true, Time: t0})},
		{name: "alice signs in", cmd: signIn("alice@corp.example", "corp", "https://idp.example", "a-1", true), check: person("alice@corp.example", "https://idp.example", "a-1", true)},
		{name: "another subject of the same issuer claims alice", cmd: signIn("alice@corp.example", "corp", "https://idp.example", "a-2", false), wantErr: ErrConflict,
			check: person("alice@corp.example", "https://idp.example", "a-1", true)},
		{name: "another provider's person claims alice", cmd: signIn("alice@corp.example", "other", "https://other.example", "a-1", false), wantErr: ErrConflict},
		{name: "a person named admin takes root's admin", cmd: signIn("admin", "other", "https://other.example", "x-1", false), wantErr: ErrConflict,
			check: person("admin", "", "", true)},
		{name: "alice again", cmd: signIn("alice@corp.example", "corp", "https://idp.example", "a-1", false), check: person("alice@corp.example", "https://idp.example", "a-1", false)},
		{name: "bob signed in before the pair was kept", cmd: mustEncode(t, TypeUserSignIn, UserSignIn{Name: "bob@corp.example", Provider: "corp", Time: t0}),
			check: person("bob@corp.example", "", "", false)},
		{name: "bob's next sign-in keeps his pair", cmd: signIn("bob@corp.example", "corp", "https://idp.example", "b-1", false), check: person("bob@corp.example", "https://idp.example", "b-1", false)},
		{name: "a subject without an issuer", cmd: signIn("carol@corp.example", "corp", "", "c-1", false), wantErr: ErrInvalid},
		{name: "an admin binds dave before he ever signed in", cmd: mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"dave@corp.example"}, Time: t0, Claimable: true})},
		{name: "dave signs in and takes the name", cmd: signIn("dave@corp.example", "corp", "https://idp.example", "d-1", false), check: person("dave@corp.example", "https://idp.example", "d-1", false)},
		{name: "a binding written before claims existed", cmd: mustEncode(t, TypeRoleBindingAdd, RoleBindingChange{Namespace: api.DefaultNamespace, Users: []string{"erin@corp.example"}, Time: t0})},
		{name: "erin may not take that record", cmd: signIn("erin@corp.example", "corp", "https://idp.example", "e-1", false), wantErr: ErrConflict},
	})
}
