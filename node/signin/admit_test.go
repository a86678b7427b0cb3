package signin

import (
	"errors"
	"strings"
	"testing"

	"github.com/svc-project/svc/raftfsm"
)

// Who a provider lets in: its admin groups always; others only where the
// admin said so (groups, Google Workspace domains by the hd claim, never
// an address's domain, usernames), or AllowAnyone. A provider that says
// nothing admits its admins alone.
func TestMapClaims_admission(t *testing.T) {
	claims := func(email string, groups []any, hd string) map[string]any {
		c := map[string]any{"iss": "https://idp.example", "sub": "s-" + email, "email": email, "email_verified": true, "groups": groups}
		if hd != "" {
			c["hd"] = hd
		}
		return c
	}
	for _, tc := range []struct {
		name   string
		p      raftfsm.OIDCProvider
		claims map[string]any
		ok     bool
		says   string
	}{
		{"nothing said: an admin", raftfsm.OIDCProvider{AdminGroups: []string{"ops"}}, claims("a@corp.example", []any{"ops"}, ""), true, ""},
		{"nothing said: anyone else", raftfsm.OIDCProvider{AdminGroups: []string{"ops"}}, claims("b@gmail.com", nil, ""), false, "admits only its admin groups"},
		{"anyone, knowingly", raftfsm.OIDCProvider{AllowAnyone: true}, claims("b@gmail.com", nil, ""), true, ""},
		{"by group", raftfsm.OIDCProvider{AllowedGroups: []string{"dev"}}, claims("c@corp.example", []any{"dev"}, ""), true, ""},
		{"by domain, from hd", raftfsm.OIDCProvider{AllowedDomains: []string{"corp.example"}}, claims("d@corp.example", nil, "corp.example"), true, ""},
		{"by domain, an address of it but no hd", raftfsm.OIDCProvider{AllowedDomains: []string{"corp.example"}}, claims("e@corp.example", nil, ""), false, "none of the domains"},
		{"by domain, another hd", raftfsm.OIDCProvider{AllowedDomains: []string{"corp.example"}}, claims("f@corp.example", nil, "evil.example"), false, "none of the domains"},
		{"by username", raftfsm.OIDCProvider{AllowedUsers: []string{"g@corp.example"}}, claims("g@corp.example", nil, ""), true, ""},
		{"by username, another", raftfsm.OIDCProvider{AllowedUsers: []string{"g@corp.example"}}, claims("h@corp.example", nil, ""), false, "not one of the users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Name, tc.p.UsernameClaim, tc.p.GroupsClaim = "corp", "email", "groups"
			id, err := mapClaims(tc.p, tc.claims)
			if tc.ok {
				if err != nil || id.Subject == "" || id.Issuer != "https://idp.example" {
					t.Fatalf("refused: %+v %v", id, err)
				}
				return
			}
			if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want ErrNotAllowed saying %q", err, tc.says)
			}
		})
	}
}

// The only redirect addresses that are svc's: the web UI's own callback
// as the request reached the peer, and loopback (the CLI's).
func TestCheckRedirect_cases(t *testing.T) {
	own := "https://svc.corp.example/ui/callback"
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{own, true},
		{"http://127.0.0.1:53682/callback", true},
		{"http://localhost:9/callback", true},
		{"http://[::1]:9/callback", true},
		{"https://evil.example/ui/callback", false},
		{"https://svc.corp.example/other", false},
		{"http://svc.corp.example/ui/callback", false},
		{"https://svc.corp.example/ui/callback#x", false},
		{"not a url", false},
	} {
		if err := CheckRedirect(tc.raw, own); (err == nil) != tc.ok {
			t.Errorf("CheckRedirect(%q) = %v, want ok %v", tc.raw, err, tc.ok)
		}
	}
}
