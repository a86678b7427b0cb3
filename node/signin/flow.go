package signin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// Start begins a browser sign-in with a provider: the URL to send the
// browser to, whose state the provider hands back to redirect with a code.
func (s *Service) Start(ctx context.Context, provider, redirect string) (api.SignInStart, error) {
	if err := CheckRedirect(redirect); err != nil {
		return api.SignInStart{}, err
	}
	p, err := s.provider(provider)
	if err != nil {
		return api.SignInStart{}, err
	}
	r, err := s.discover(ctx, p)
	if err != nil {
		return api.SignInStart{}, err
	}
	conf, err := s.oauth(p, r, redirect)
	if err != nil {
		return api.SignInStart{}, err
	}
	v := sealed{Provider: p.Name, Issuer: p.Issuer, Nonce: random(16), Verifier: oauth2.GenerateVerifier(),
		Redirect: redirect, Expires: time.Now().Add(StateTTL).Unix()}
	state, err := s.seal("state", v)
	if err != nil {
		return api.SignInStart{}, err
	}
	u := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(v.Verifier), oidc.Nonce(v.Nonce))
	return api.SignInStart{AuthURL: u, State: state}, nil
}

// Finish redeems the code the provider handed back with state, and
// verifies the ID token it answers.
func (s *Service) Finish(ctx context.Context, provider, state, code string) (Identity, error) {
	if code == "" || len(code) > 4096 {
		return Identity{}, fmt.Errorf("%w: field \"code\" must be the provider's code", ErrInvalid)
	}
	v, err := s.open("state", provider, state, time.Now())
	if err != nil {
		return Identity{}, err
	}
	p, err := s.provider(provider)
	if err != nil {
		return Identity{}, err
	}
	if p.Issuer != v.Issuer {
		return Identity{}, fmt.Errorf("%w: provider %q changed its issuer during this sign-in; start again", ErrRefused, provider)
	}
	r, err := s.discover(ctx, p)
	if err != nil {
		return Identity{}, err
	}
	conf, err := s.oauth(p, r, v.Redirect)
	if err != nil {
		return Identity{}, err
	}
	cctx, cancel := context.WithTimeout(s.ctx(ctx), s.cfg.Timeout)
	defer cancel()
	tok, err := conf.Exchange(cctx, code, oauth2.VerifierOption(v.Verifier))
	if err != nil {
		return Identity{}, s.tokenError(p, err)
	}
	return s.identity(ctx, p, r, tok, v.Nonce)
}

// tokenError explains a failed token request: the provider's refusal, or
// no answer.
func (s *Service) tokenError(p raftfsm.OIDCProvider, err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		msg := re.ErrorCode
		if re.ErrorDescription != "" {
			msg += ": " + re.ErrorDescription
		}
		return fmt.Errorf("%w: provider %q refused: %s", ErrRefused, p.Name, msg)
	}
	return s.unreachable(p, "a token request", err)
}

// identity verifies the ID token of a token answer and maps it.
func (s *Service) identity(ctx context.Context, p raftfsm.OIDCProvider, r *remote, tok *oauth2.Token, nonce string) (Identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fmt.Errorf("%w: provider %q answered no ID token (is \"openid\" among its scopes?)", ErrRefused, p.Name)
	}
	return s.Verify(ctx, p.Name, raw, nonce)
}

// Verify checks an ID token of a provider: its signature against the
// provider's keys, issuer, audience (the client id), expiry and, when the
// sign-in had one, the nonce; then maps its claims to an Identity.
func (s *Service) Verify(ctx context.Context, provider, raw, nonce string) (Identity, error) {
	p, err := s.provider(provider)
	if err != nil {
		return Identity{}, err
	}
	r, err := s.discover(ctx, p)
	if err != nil {
		return Identity{}, err
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	idt, err := r.verifier.Verify(vctx, raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		switch {
		case errors.As(err, &expired):
			return Identity{}, fmt.Errorf("%w: the ID token expired at %s", ErrRefused, expired.Expiry.UTC().Format(time.RFC3339))
		case errors.Is(err, context.DeadlineExceeded):
			return Identity{}, s.unreachable(p, "its signing keys", err)
		}
		return Identity{}, fmt.Errorf("%w: the ID token does not verify against provider %q: %v", ErrRefused, p.Name, err)
	}
	if nonce != "" && idt.Nonce != nonce {
		return Identity{}, fmt.Errorf("%w: the ID token's nonce is not this sign-in's (a token of another sign-in, replayed?)", ErrRefused)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return Identity{}, fmt.Errorf("%w: the ID token's claims: %v", ErrRefused, err)
	}
	return mapClaims(p, claims)
}

// mapClaims names the person and their groups, and decides their role.
func mapClaims(p raftfsm.OIDCProvider, claims map[string]any) (Identity, error) {
	uc := p.UsernameClaim
	if uc == "" {
		uc = DefaultUsernameClaim
	}
	name, _ := claims[uc].(string)
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return Identity{}, fmt.Errorf("%w: the ID token has no %q claim to name the user by (set --username-claim, or add the scope that carries it)", ErrRefused, uc)
	}
	if err := api.ValidateUserName("user", name); err != nil {
		return Identity{}, fmt.Errorf("%w: claim %q: %v", ErrRefused, uc, err)
	}
	if uc == "email" {
		if v, ok := claims["email_verified"].(bool); ok && !v {
			return Identity{}, fmt.Errorf("%w: the provider has not verified %s's e-mail address", ErrRefused, name)
		}
	}
	gc := p.GroupsClaim
	if gc == "" {
		gc = DefaultGroupsClaim
	}
	groups, err := groupsOf(claims[gc])
	if err != nil {
		return Identity{}, fmt.Errorf("%w: claim %q: %v", ErrRefused, gc, err)
	}
	id := Identity{User: name, Groups: groups, Provider: p.Name}
	id.Admin = intersects(groups, p.AdminGroups)
	if len(p.AllowedGroups) > 0 && !id.Admin && !intersects(groups, p.AllowedGroups) {
		return Identity{}, fmt.Errorf("%w: %s is in none of the groups provider %q admits (%s)", ErrNotAllowed, name, p.Name, strings.Join(p.AllowedGroups, ", "))
	}
	return id, nil
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
