package fabric

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// tokenPrefix opens every join token (and names its format's version).
const tokenPrefix = "svcjt1"

// ErrBadToken is wrapped when a join token cannot be read.
var ErrBadToken = errors.New("malformed join token")

// JoinToken lets one host join a cluster: it names the cluster's CA by
// fingerprint (the host checks the peer it contacts against it before it
// sends anything), the token's id (listed and revoked by admins) and its
// secret (which the cluster keeps only as a hash).
type JoinToken struct {
	CA     string // hex SHA-256 of the CA certificate
	ID     string // 16 hex digits
	Secret string // 43 base64url characters: 256 bits
}

// NewJoinToken makes a token for the CA with this fingerprint.
func NewJoinToken(caFingerprint string) (JoinToken, error) {
	id := make([]byte, 8)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return JoinToken{}, fmt.Errorf("join token: %w", err)
	}
	if _, err := rand.Read(secret); err != nil {
		return JoinToken{}, fmt.Errorf("join token: %w", err)
	}
	return JoinToken{CA: caFingerprint, ID: hex.EncodeToString(id), Secret: base64.RawURLEncoding.EncodeToString(secret)}, nil
}

// String is the token as an admin hands it to a host.
func (t JoinToken) String() string {
	return tokenPrefix + "." + t.CA + "." + t.ID + "." + t.Secret
}

// ParseJoinToken reads a token written by String.
func ParseJoinToken(s string) (JoinToken, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) != 4 || parts[0] != tokenPrefix {
		return JoinToken{}, fmt.Errorf("%w: it has the form %s.<CA fingerprint>.<id>.<secret> (svc cluster join-token create)", ErrBadToken, tokenPrefix)
	}
	t := JoinToken{CA: parts[1], ID: parts[2], Secret: parts[3]}
	if b, err := hex.DecodeString(t.CA); err != nil || len(b) != sha256.Size {
		return JoinToken{}, fmt.Errorf("%w: the CA fingerprint is not 64 hex digits", ErrBadToken)
	}
	if !ValidTokenID(t.ID) {
		return JoinToken{}, fmt.Errorf("%w: the id is not 16 hex digits", ErrBadToken)
	}
	if b, err := base64.RawURLEncoding.DecodeString(t.Secret); err != nil || len(b) != 32 {
		return JoinToken{}, fmt.Errorf("%w: the secret is not 256 bits of base64url", ErrBadToken)
	}
	return t, nil
}

// ValidTokenID reports whether id is a join token id (16 lowercase hex
// digits).
func ValidTokenID(id string) bool {
	if len(id) != 16 {
		return false
	}
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// HashSecret is what the cluster keeps of a token's secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SameHash compares two secret hashes in constant time.
func SameHash(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
