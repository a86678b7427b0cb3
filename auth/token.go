package auth

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Kinds of subject.
const (
	KindUser           = "user"
	KindServiceAccount = "serviceaccount"
	KindPeer           = "peer"
)

// Roles of users.
const (
	RoleAdmin = "admin"
	RoleUser  = "user"
)

// Token lifetimes.
const (
	PersonalTTL       = time.Hour
	ServiceAccountTTL = 8760 * time.Hour
	PeerTTL           = 10 * time.Minute
	// Leeway is the clock skew tolerated between peers and clients.
	Leeway = 5 * time.Second
)

// Errors of verification; compare with errors.Is.
var (
	ErrNoToken       = errors.New("no bearer token")
	ErrMalformed     = errors.New("malformed token")
	ErrBadSignature  = errors.New("token signature is invalid")
	ErrExpired       = errors.New("token has expired")
	ErrNotYetValid   = errors.New("token is not valid yet")
	ErrRevoked       = errors.New("token's subject no longer exists")
	ErrUnknownIssuer = errors.New("token's issuer is unknown")
)

// Principal is who a request acts for.
type Principal struct {
	Kind      string
	Name      string
	Role      string // users: admin or user
	Namespace string // service accounts: their namespace
	// UID is the incarnation of the user or service account the token was
	// issued to (its record's UID): one removed and named again is another.
	UID uint64
}

// IsAdmin reports whether p holds the admin role.
func (p Principal) IsAdmin() bool { return p.Kind == KindUser && p.Role == RoleAdmin }

// String names the principal for messages: user "alice", service account "ns:ci".
func (p Principal) String() string {
	switch p.Kind {
	case KindServiceAccount:
		return fmt.Sprintf("service account %q", p.Namespace+":"+p.Name)
	case KindPeer:
		return fmt.Sprintf("peer %q", p.Name)
	}
	return fmt.Sprintf("user %q", p.Name)
}

// Claims are the JWT claims of a cluster token.
type Claims struct {
	jwt.RegisteredClaims
	Kind      string `json:"kind"`
	Role      string `json:"role,omitempty"`
	Namespace string `json:"ns,omitempty"`
	UID       uint64 `json:"uid,omitempty"`
}

// Issuer is the "iss" of the tokens a cluster signs.
func Issuer(clusterID string) string { return "svc/" + clusterID }

// Sign makes a token for p, valid for ttl from now (ttl <= 0: it never
// expires). It returns the token and its expiry (nil when none).
func Sign(seed []byte, clusterID string, p Principal, ttl time.Duration, now time.Time) (string, *time.Time, error) {
	if len(seed) != ed25519.SeedSize {
		return "", nil, errors.New("the cluster has no signing key yet")
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	c := Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:   Issuer(clusterID),
			Subject:  p.Name,
			IssuedAt: jwt.NewNumericDate(now),
			ID:       hex.EncodeToString(id),
		},
		Kind: p.Kind, Role: p.Role, Namespace: p.Namespace, UID: p.UID,
	}
	var exp *time.Time
	if ttl > 0 {
		e := now.Add(ttl).UTC().Truncate(time.Second)
		exp = &e
		c.ExpiresAt = jwt.NewNumericDate(e)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		return "", nil, fmt.Errorf("sign token: %w", err)
	}
	return tok, exp, nil
}

// BearerToken extracts the token of an Authorization header value.
func BearerToken(header string) (string, error) {
	if header == "" {
		return "", ErrNoToken
	}
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return "", fmt.Errorf("%w: the Authorization header must be \"Bearer <token>\"", ErrMalformed)
	}
	return strings.TrimSpace(tok), nil
}
