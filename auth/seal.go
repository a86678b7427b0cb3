package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// ErrUnseal is wrapped when sealed bytes do not open with the cluster's key.
var ErrUnseal = errors.New("sealed secret does not open with this cluster's key")

func sealer(key []byte) (cipher.AEAD, error) {
	if len(key) != 32 {
		return nil, errors.New("the cluster has no sealing key")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// RegistryCredentialAAD binds a sealed registry password to its namespace
// and server: what Seal and Unseal of one are given.
func RegistryCredentialAAD(ns, server string) []byte { return []byte(ns + "/" + server) }

// Seal encrypts a secret (a registry password) with the cluster's sealing
// key (AES-256-GCM; Keys.SealKey, derived from the cluster secret, which
// the replicated state never holds); aad binds it to where it belongs
// (namespace and server), so a sealed value moved elsewhere does not open.
func Seal(key, secret, aad []byte) ([]byte, error) {
	g, err := sealer(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(secret)+g.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return g.Seal(nonce, nonce, secret, aad), nil
}

// Unseal opens what Seal sealed with the same key and aad.
func Unseal(key, sealed, aad []byte) ([]byte, error) {
	g, err := sealer(key)
	if err != nil {
		return nil, fmt.Errorf("unseal: %w", err)
	}
	if len(sealed) < g.NonceSize() {
		return nil, ErrUnseal
	}
	out, err := g.Open(nil, sealed[:g.NonceSize()], sealed[g.NonceSize():], aad)
	if err != nil {
		return nil, ErrUnseal
	}
	return out, nil
}
