package auth

import (
	"crypto/ed25519"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

func signWithIssuer(t *testing.T, seed []byte, iss string) string {
	t.Helper()
	c := Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: iss, Subject: "someone", IssuedAt: jwt.NewNumericDate(t0)}, Kind: KindUser, Role: RoleUser}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c).SignedString(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
