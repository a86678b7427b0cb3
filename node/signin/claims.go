package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// maxSubject bounds a person's subject (OIDC Core: at most 255 ASCII
// characters).
const maxSubject = 255

// maxUserInfo bounds a UserInfo answer.
const maxUserInfo = 1 << 20

// needsUserInfo says whether the ID token lacks a claim the sign-in reads
// (the username, the groups, a domain to admit): many providers put only
// "sub" in the ID token and the rest in UserInfo (OIDC Core 5.4).
func needsUserInfo(p raftfsm.OIDCProvider, claims map[string]any) bool {
	for _, c := range []string{cmpOr(p.UsernameClaim, DefaultUsernameClaim), cmpOr(p.GroupsClaim, DefaultGroupsClaim)} {
		if _, ok := claims[c]; !ok {
			return true
		}
	}
	if len(p.AllowedDomains) > 0 {
		if _, ok := claims["hd"]; !ok {
			return true
		}
	}
	return false
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// userInfo reads the person's claims from the provider's UserInfo
// endpoint with the access token of the sign-in (a JSON answer, at most
// maxUserInfo bytes, within the call timeout).
func (s *Service) userInfo(ctx context.Context, p raftfsm.OIDCProvider, r *remote, accessToken string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.userInfo, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: provider %q: UserInfo endpoint %q: %v", ErrUnavailable, p.Name, r.userInfo, err)
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("Accept", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, s.unreachable(p, "its UserInfo endpoint", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxUserInfo+1))
	if err != nil {
		return nil, s.unreachable(p, "its UserInfo endpoint", err)
	}
	switch {
	case resp.StatusCode >= 500:
		return nil, fmt.Errorf("%w: provider %q's UserInfo endpoint answered %s", ErrUnavailable, p.Name, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("%w: provider %q's UserInfo endpoint refused the sign-in's access token: %s", ErrRefused, p.Name, resp.Status)
	case len(body) > maxUserInfo:
		return nil, fmt.Errorf("%w: provider %q's UserInfo answer is over %d bytes", ErrRefused, p.Name, maxUserInfo)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("%w: provider %q's UserInfo answer is %q, not JSON (signed or encrypted UserInfo is not supported: have the provider answer JSON)", ErrRefused, p.Name, mt)
	}
	var info map[string]any
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("%w: provider %q's UserInfo answer is not a JSON object: %v", ErrRefused, p.Name, err)
	}
	return info, nil
}

// mapClaims names the person and their groups, decides their role, and
// whether the provider's configuration lets them in.
func mapClaims(p raftfsm.OIDCProvider, claims map[string]any) (Identity, error) {
	uc := cmpOr(p.UsernameClaim, DefaultUsernameClaim)
	raw, _ := claims[uc].(string)
	name := strings.ToLower(strings.TrimSpace(raw))
	if name == "" {
		return Identity{}, fmt.Errorf("%w: the provider names no %q claim to name the user by, in the ID token or UserInfo (set --username-claim, or add the scope that carries it)", ErrRefused, uc)
	}
	if err := api.ValidateUserName("user", name); err != nil {
		return Identity{}, fmt.Errorf("%w: claim %q: %v", ErrRefused, uc, err)
	}
	if uc == "email" {
		if err := emailVerified(claims["email_verified"]); err != nil {
			return Identity{}, fmt.Errorf("%w: %s: %v", ErrRefused, name, err)
		}
	}
	if claims["_claim_names"] != nil || claims["hasgroups"] != nil {
		if _, ok := claims[cmpOr(p.GroupsClaim, DefaultGroupsClaim)]; !ok {
			return Identity{}, fmt.Errorf("%w: provider %q sent a pointer to %s's groups instead of the groups (over 200: Entra ID's overage): have it send only the groups assigned to this application (Entra ID: groupMembershipClaims \"ApplicationGroup\")", ErrRefused, p.Name, name)
		}
	}
	gc := cmpOr(p.GroupsClaim, DefaultGroupsClaim)
	groups, err := groupsOf(claims[gc])
	if err != nil {
		return Identity{}, fmt.Errorf("%w: claim %q: %v", ErrRefused, gc, err)
	}
	sub, _ := claims["sub"].(string)
	iss, _ := claims["iss"].(string)
	id := Identity{User: name, Groups: groups, Provider: p.Name, Issuer: iss, Subject: sub}
	id.Admin = intersects(groups, p.AdminGroups)
	if !id.Admin && !admitted(p, name, groups, claims) {
		return Identity{}, fmt.Errorf("%w: %s", ErrNotAllowed, refusal(p, name))
	}
	return id, nil
}

// emailVerified refuses an e-mail address the provider says it has not
// verified: email_verified false, or a string that is not "true" (some
// providers send the boolean as a string). No claim at all is taken as the
// provider's word that it verifies every address.
func emailVerified(v any) error {
	switch b := v.(type) {
	case nil:
		return nil
	case bool:
		if b {
			return nil
		}
	case string:
		if strings.EqualFold(strings.TrimSpace(b), "true") {
			return nil
		}
	}
	return errors.New("the provider has not verified the e-mail address")
}

// admitted says whether the provider's configuration lets a person in
// who is not an admin: anyone, or by group, Google Workspace domain (the
// "hd" claim, never the address's domain) or username.
func admitted(p raftfsm.OIDCProvider, name string, groups []string, claims map[string]any) bool {
	if p.AllowAnyone || intersects(groups, p.AllowedGroups) || slices.Contains(p.AllowedUsers, name) {
		return true
	}
	hd, _ := claims["hd"].(string)
	return hd != "" && slices.ContainsFunc(p.AllowedDomains, func(d string) bool { return strings.EqualFold(d, hd) })
}

// refusal says why a person is not let in.
func refusal(p raftfsm.OIDCProvider, name string) string {
	var what []string
	if len(p.AllowedGroups) > 0 {
		what = append(what, "in none of the groups ("+strings.Join(p.AllowedGroups, ", ")+")")
	}
	if len(p.AllowedDomains) > 0 {
		what = append(what, "of none of the domains ("+strings.Join(p.AllowedDomains, ", ")+")")
	}
	if len(p.AllowedUsers) > 0 {
		what = append(what, "not one of the users it names")
	}
	if len(what) == 0 {
		return fmt.Sprintf("provider %q admits only its admin groups, and %s is in none (an admin sets --allowed-group, --allowed-domain or --allowed-user)", p.Name, name)
	}
	return fmt.Sprintf("%s is %s that provider %q admits", name, strings.Join(what, ", "), p.Name)
}

// groupsOf reads a groups claim: a list of strings, or one string.
func groupsOf(v any) ([]string, error) {
	var out []string
	switch g := v.(type) {
	case nil:
		return []string{}, nil
	case string:
		out = []string{g}
	case []any:
		for _, x := range g {
			s, ok := x.(string)
			if !ok {
				return nil, errors.New("a group is not a string")
			}
			out = append(out, s)
		}
	default:
		return nil, errors.New("not a list of groups")
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > api.MaxSignInGroups {
		return nil, fmt.Errorf("%d groups, at most %d: have the provider send only the groups assigned to this application", len(out), api.MaxSignInGroups)
	}
	for _, g := range out {
		if err := api.ValidateGroup(g); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func intersects(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
