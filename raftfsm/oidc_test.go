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
