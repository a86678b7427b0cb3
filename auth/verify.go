package auth

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/svc-project/svc/raftfsm"
)

// State is what verification reads from the local replica.
type State interface {
	Initialized() (bool, string)
	User(name string) (raftfsm.User, bool)
	ServiceAccount(ns, name string) (raftfsm.ServiceAccount, bool)
}

// Keys are the cluster's secret keys, which the replicated state keeps
// wrapped under the cluster secret and the peer unwraps.
type Keys interface {
	// SigningKey is the Ed25519 seed tokens are signed with (nil until
	// the state has it).
	SigningKey() []byte
	// SealKey is the 32-byte key secrets kept in the state (registry
	// passwords) are sealed with.
	SealKey() []byte
}

// Verifier checks the tokens of one issuer.
type Verifier interface {
	Verify(token string, now time.Time) (Principal, error)
}

// Authenticator checks bearer tokens: the cluster's own, and those of any
// other issuer added with AddIssuer.
type Authenticator struct {
	cluster *ClusterVerifier
	others  map[string]Verifier
}

// NewAuthenticator returns an authenticator of the cluster's tokens.
func NewAuthenticator(st State, keys Keys) *Authenticator {
	return &Authenticator{cluster: &ClusterVerifier{State: st, Keys: keys}, others: map[string]Verifier{}}
}

// AddIssuer trusts the tokens of another issuer (e.g. an OpenID Connect provider).
func (a *Authenticator) AddIssuer(iss string, v Verifier) { a.others[iss] = v }

// Authenticate checks an Authorization header value.
func (a *Authenticator) Authenticate(header string, now time.Time) (Principal, error) {
	tok, err := BearerToken(header)
	if err != nil {
		return Principal{}, err
	}
	if len(a.others) > 0 {
		var c Claims
		if _, _, err := jwt.NewParser().ParseUnverified(tok, &c); err != nil {
			return Principal{}, malformed(err)
		}
		if v, ok := a.others[c.Issuer]; ok {
			return v.Verify(tok, now)
		}
	}
	return a.cluster.Verify(tok, now)
}

// Known reports whether the header carries a token whose signature this
// peer has verified before (a cache lookup: no signature is checked). It
// says nothing of the token's times or subject: Authenticate still checks
// those.
func (a *Authenticator) Known(header string) bool {
	tok, err := BearerToken(header)
	if err != nil {
		return false
	}
	_, ok := a.cluster.cached(tok)
	return ok
}

// ClusterVerifier checks tokens the cluster signed.
type ClusterVerifier struct {
	State State
	Keys  Keys

	mu   sync.Mutex
	seed []byte
	pub  ed25519.PublicKey
	// verified remembers the claims of tokens whose signature checked out,
	// so a client sending the same token again costs no signature check.
	// Times and the subject are still checked on every request.
	verified map[string]Claims
}

// maxVerified bounds the cache of verified signatures.
const maxVerified = 4096

// publicKey derives the verification key once per signing key (and forgets
// the verified signatures of another key).
func (v *ClusterVerifier) publicKey(seed []byte) ed25519.PublicKey {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !bytes.Equal(seed, v.seed) {
		v.seed = bytes.Clone(seed)
		v.pub = ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		v.verified = map[string]Claims{}
	}
	return v.pub
}

func (v *ClusterVerifier) cached(tok string) (Claims, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	c, ok := v.verified[tok]
	return c, ok
}

func (v *ClusterVerifier) remember(tok string, c Claims) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.verified) >= maxVerified {
		for k := range v.verified { // drop an arbitrary half
			delete(v.verified, k)
			if len(v.verified) < maxVerified/2 {
				break
			}
		}
	}
	v.verified[tok] = c
}

// malformed says what is wrong with a token the JWT parser could not read,
// once (the parser's own words repeat "token is malformed"), and what a
// token looks like.
func malformed(err error) error {
	msg := strings.TrimPrefix(err.Error(), jwt.ErrTokenMalformed.Error()+": ")
	return fmt.Errorf("%w: %s; a token is three base64url parts joined by dots (eyJ...), as 'svc login' or 'svc admin token' prints it", ErrMalformed, msg)
}

// checkSignature returns the claims of a token whose signature is the cluster's.
func (v *ClusterVerifier) checkSignature(tok string, pub ed25519.PublicKey) (Claims, error) {
	if c, ok := v.cached(tok); ok {
		return c, nil
	}
	var c Claims
	_, err := jwt.ParseWithClaims(tok, &c, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodEdDSA.Alg()}), jwt.WithoutClaimsValidation())
	switch {
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return c, ErrBadSignature
	case err != nil:
		return c, malformed(err)
	}
	v.remember(tok, c)
	return c, nil
}

// checkTimes refuses an expired token, or one issued in the future,
// tolerating Leeway of clock skew.
func checkTimes(c Claims, now time.Time) error {
	if c.ExpiresAt != nil && now.After(c.ExpiresAt.Add(Leeway)) {
		return fmt.Errorf("%w (at %s)", ErrExpired, c.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if c.IssuedAt != nil && c.IssuedAt.After(now.Add(Leeway)) {
		return ErrNotYetValid
	}
	if c.NotBefore != nil && c.NotBefore.After(now.Add(Leeway)) {
		return ErrNotYetValid
	}
	return nil
}

// Verify checks signature, issuer, times and that the subject still exists.
func (v *ClusterVerifier) Verify(tok string, now time.Time) (Principal, error) {
	ok, clusterID := v.State.Initialized()
	seed := v.Keys.SigningKey()
	if !ok || len(seed) != ed25519.SeedSize {
		return Principal{}, fmt.Errorf("%w: the cluster has no signing key yet", ErrUnknownIssuer)
	}
	c, err := v.checkSignature(tok, v.publicKey(seed))
	if err != nil {
		return Principal{}, err
	}
	if err := checkTimes(c, now); err != nil {
		return Principal{}, err
	}
	if c.Issuer != Issuer(clusterID) {
		return Principal{}, fmt.Errorf("%w: %q", ErrUnknownIssuer, c.Issuer)
	}
	if c.IssuedAt == nil || c.Subject == "" {
		return Principal{}, fmt.Errorf("%w: no subject or issue time", ErrMalformed)
	}
	issued := c.IssuedAt.Time
	p := Principal{Kind: c.Kind, Name: c.Subject, Role: c.Role, Namespace: c.Namespace, UID: c.UID}
	switch c.Kind {
	case KindUser:
		u, ok := v.State.User(c.Subject)
		// A user removed and named again is another user: its tokens are not
		// the old one's, however close in time the two were named.
		if !ok || !sameIncarnation(c.UID, u.UID, issued, u.CreatedAt) {
			return Principal{}, fmt.Errorf("%w: user %q was removed", ErrRevoked, c.Subject)
		}
		if c.Role != RoleAdmin && c.Role != RoleUser {
			return Principal{}, fmt.Errorf("%w: unknown role %q", ErrMalformed, c.Role)
		}
		// The role follows the user's record: an admin token of a person
		// whose directory group no longer makes them one (or whom root
		// named again without --admin) acts as a user's.
		if c.Role == RoleAdmin && !u.Admin {
			p.Role = RoleUser
		}
	case KindServiceAccount:
		sa, ok := v.State.ServiceAccount(c.Namespace, c.Subject)
		if !ok || !sameIncarnation(c.UID, sa.UID, issued, sa.CreatedAt) {
			return Principal{}, fmt.Errorf("%w: service account %q was deleted", ErrRevoked, c.Namespace+":"+c.Subject)
		}
	case KindPeer:
		// Peers are their certificates: no token makes a peer.
		return Principal{}, fmt.Errorf("%w: peers authenticate with their certificates, not with tokens", ErrMalformed)
	default:
		return Principal{}, fmt.Errorf("%w: unknown kind %q", ErrMalformed, c.Kind)
	}
	return p, nil
}

// sameIncarnation reports whether a token (its uid claim and issue time) was
// issued to the record (its UID and creation time). Records and tokens from
// before UIDs existed (0) fall back to the times.
func sameIncarnation(tokenUID, recordUID uint64, issued, created time.Time) bool {
	if recordUID != 0 {
		return tokenUID == recordUID
	}
	return tokenUID == 0 && !issued.Before(created.Truncate(time.Second))
}
