package fabric

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"

	"golang.org/x/crypto/hkdf"
)

// SecretSize is the size of the cluster secret: 256 random bits, made by
// the peer that forms the cluster and handed to each peer when it joins.
// It never enters the replicated state; the keys the state keeps (the
// CA's, the token signing key, the gossip keys) are wrapped under keys
// derived from it.
const SecretSize = 32

// Purposes of the keys derived from the cluster secret: each use has its
// own key.
const (
	PurposeCAKey       = "svc fabric ca key v1"
	PurposeSigningKey  = "svc fabric token signing key v1"
	PurposeGossipKeys  = "svc fabric gossip keys v1"
	PurposeRegistry    = "svc registry credentials v2"
	PurposeUploadedKey = "svc fabric uploaded https key v1"
)

// ErrUnwrap is wrapped when wrapped bytes do not open with the secret.
var ErrUnwrap = errors.New("wrapped secret does not open with this cluster's secret")

// NewSecret returns a fresh cluster secret.
func NewSecret() ([]byte, error) {
	s := make([]byte, SecretSize)
	if _, err := rand.Read(s); err != nil {
		return nil, fmt.Errorf("cluster secret: %w", err)
	}
	return s, nil
}

// Derive returns the 32-byte key of purpose under the cluster secret
// (HKDF-SHA256).
func Derive(secret []byte, purpose string) ([]byte, error) {
	if len(secret) != SecretSize {
		return nil, errors.New("no cluster secret")
	}
	key := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, secret, nil, []byte(purpose)), key); err != nil {
		return nil, fmt.Errorf("derive key: %w", err)
	}
	return key, nil
}

func aead(secret []byte, purpose string) (cipher.AEAD, error) {
	key, err := Derive(secret, purpose)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Wrap encrypts plaintext under the key of purpose (AES-256-GCM), bound to
// aad: a wrapped value moved to another purpose or place does not open.
func Wrap(secret []byte, purpose string, plaintext, aad []byte) ([]byte, error) {
	g, err := aead(secret, purpose)
	if err != nil {
		return nil, fmt.Errorf("wrap: %w", err)
	}
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(plaintext)+g.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("wrap: %w", err)
	}
	return g.Seal(nonce, nonce, plaintext, aad), nil
}

// Unwrap opens what Wrap wrapped with the same secret, purpose and aad.
func Unwrap(secret []byte, purpose string, wrapped, aad []byte) ([]byte, error) {
	g, err := aead(secret, purpose)
	if err != nil {
		return nil, fmt.Errorf("unwrap: %w", err)
	}
	if len(wrapped) < g.NonceSize() {
		return nil, ErrUnwrap
	}
	out, err := g.Open(nil, wrapped[:g.NonceSize()], wrapped[g.NonceSize():], aad)
	if err != nil {
		return nil, ErrUnwrap
	}
	return out, nil
}
