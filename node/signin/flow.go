package signin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// Start begins a browser sign-in with a provider: the URL to send the
// browser to, whose state the provider hands back to redirect with a code,
// and the PKCE verifier the client keeps and sends with the code (Finish).
// ownCallback is the web UI's own callback address as the request reached
// this peer; the redirect must be it, or a loopback address (the CLI's).
func (s *Service) Start(ctx context.Context, provider, redirect, ownCallback string) (api.SignInStart, error) {
	if err := CheckRedirect(redirect, ownCallback); err != nil {
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
	verifier := oauth2.GenerateVerifier()
	v := sealed{Provider: p.Name, Issuer: p.Issuer, Nonce: random(16), Challenge: oauth2.S256ChallengeFromVerifier(verifier),
		Redirect: redirect, Expires: time.Now().Add(StateTTL).Unix()}
	state, err := s.seal("state", v)
	if err != nil {
		return api.SignInStart{}, err
	}
	u := conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(v.Nonce))
	return api.SignInStart{AuthURL: u, State: state, CodeVerifier: verifier}, nil
}

// Finish redeems the code the provider handed back with state, with the
// PKCE verifier the client kept since Start, and verifies the ID token it
// answers. iss is the issuer the provider named in the redirect (RFC 9207;
// "" when it named none): it must be the provider's.
func (s *Service) Finish(ctx context.Context, provider string, cb api.SignInCallback) (Identity, error) {
	if cb.Code == "" || len(cb.Code) > 4096 {
		return Identity{}, fmt.Errorf("%w: field \"code\" must be the provider's code", ErrInvalid)
	}
	v, err := s.open("state", provider, cb.State, time.Now())
	if err != nil {
		return Identity{}, err
	}
	// Checked before anything reaches the provider: the redirect address
	// alone (code and state) redeems nothing.
	if cb.CodeVerifier == "" || len(cb.CodeVerifier) > 128 ||
		subtle.ConstantTimeCompare([]byte(oauth2.S256ChallengeFromVerifier(cb.CodeVerifier)), []byte(v.Challenge)) != 1 {
		return Identity{}, fmt.Errorf("%w: field \"codeVerifier\" is not the one of the client that started this sign-in", ErrRefused)
	}
	if !s.once("state", cb.State, v.Expires) {
		return Identity{}, fmt.Errorf("%w: this sign-in's answer was redeemed already; start again", ErrRefused)
	}
	p, err := s.provider(provider)
	if err != nil {
		return Identity{}, err
	}
	if p.Issuer != v.Issuer {
		return Identity{}, fmt.Errorf("%w: provider %q changed its issuer during this sign-in; start again", ErrRefused, provider)
	}
	if cb.Issuer != "" && cb.Issuer != p.Issuer {
		return Identity{}, fmt.Errorf("%w: the answer names issuer %q, not provider %q's (%s): a mix-up of providers (RFC 9207)", ErrRefused, cb.Issuer, provider, p.Issuer)
	}
	r, err := s.discover(ctx, p)
	if err != nil {
		return Identity{}, err
	}
	if cb.Issuer == "" && r.issResponse {
		return Identity{}, fmt.Errorf("%w: provider %q names itself in its answers (RFC 9207), and this one names no issuer", ErrRefused, provider)
	}
	conf, err := s.oauth(p, r, v.Redirect)
	if err != nil {
		return Identity{}, err
	}
	cctx, cancel := context.WithTimeout(s.ctx(ctx), s.cfg.Timeout)
	defer cancel()
	tok, err := conf.Exchange(cctx, cb.Code, oauth2.VerifierOption(cb.CodeVerifier))
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

// identity verifies the ID token of a token answer, adds the claims the
// provider keeps in its UserInfo endpoint (OIDC Core 5.4), and maps them.
func (s *Service) identity(ctx context.Context, p raftfsm.OIDCProvider, r *remote, tok *oauth2.Token, nonce string) (Identity, error) {
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return Identity{}, fmt.Errorf("%w: provider %q answered no ID token (is \"openid\" among its scopes?)", ErrRefused, p.Name)
	}
	claims, err := s.verifyToken(ctx, p, r, raw, nonce)
	if err != nil {
		return Identity{}, err
	}
	if needsUserInfo(p, claims) && r.userInfo != "" && tok.AccessToken != "" {
		info, err := s.userInfo(ctx, p, r, tok.AccessToken)
		if err != nil {
			return Identity{}, err
		}
		if sub, _ := info["sub"].(string); sub != claims["sub"] {
			return Identity{}, fmt.Errorf("%w: provider %q's UserInfo answered subject %q, its ID token %q (OIDC Core 5.3.2)", ErrRefused, p.Name, sub, claims["sub"])
		}
		for k, v := range info {
			if _, ok := claims[k]; !ok {
				claims[k] = v // the ID token's own claims win
			}
		}
	}
	return mapClaims(p, claims)
}

// Verify checks an ID token of a provider (signature, issuer, audience,
// expiry, nonce) and maps its claims to an Identity.
func (s *Service) Verify(ctx context.Context, provider, raw, nonce string) (Identity, error) {
	p, err := s.provider(provider)
	if err != nil {
		return Identity{}, err
	}
	r, err := s.discover(ctx, p)
	if err != nil {
		return Identity{}, err
	}
	claims, err := s.verifyToken(ctx, p, r, raw, nonce)
	if err != nil {
		return Identity{}, err
	}
	return mapClaims(p, claims)
}

// verifyToken checks an ID token of a provider: its signature against the
// provider's keys, issuer, audience (the client id, and the authorized
// party where it names several audiences: OIDC Core 3.1.3.7), expiry and,
// when the sign-in had one, the nonce; it returns its claims.
func (s *Service) verifyToken(ctx context.Context, p raftfsm.OIDCProvider, r *remote, raw, nonce string) (map[string]any, error) {
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	idt, err := r.verifier.Verify(vctx, raw)
	if err != nil {
		var expired *oidc.TokenExpiredError
		switch {
		case errors.As(err, &expired):
			return nil, fmt.Errorf("%w: the ID token expired at %s", ErrRefused, expired.Expiry.UTC().Format(time.RFC3339))
		case errors.Is(err, context.DeadlineExceeded):
			return nil, s.unreachable(p, "its signing keys", err)
		}
		return nil, fmt.Errorf("%w: the ID token does not verify against provider %q: %v", ErrRefused, p.Name, err)
	}
	if nonce != "" && idt.Nonce != nonce {
		return nil, fmt.Errorf("%w: the ID token's nonce is not this sign-in's (a token of another sign-in, replayed?)", ErrRefused)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: the ID token's claims: %v", ErrRefused, err)
	}
	azp, _ := claims["azp"].(string)
	if len(idt.Audience) > 1 && azp != p.ClientID {
		return nil, fmt.Errorf("%w: the ID token is for %d audiences and its authorized party is %q, not this cluster's client %q", ErrRefused, len(idt.Audience), azp, p.ClientID)
	}
	if azp != "" && azp != p.ClientID {
		return nil, fmt.Errorf("%w: the ID token was issued to %q, not this cluster's client %q", ErrRefused, azp, p.ClientID)
	}
	if sub, _ := claims["sub"].(string); sub == "" || len(sub) > maxSubject {
		return nil, fmt.Errorf("%w: the ID token names no subject (\"sub\", 1 to %d characters)", ErrRefused, maxSubject)
	}
	return claims, nil
}
