package auth

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

// sealInfo names what the sealing key is for, so that it is never the same
// key as one derived for anything else from the cluster's seed.
const sealInfo = "svc registry credentials v1"

// ErrUnseal is wrapped when sealed bytes do not open with the cluster's key.
var ErrUnseal = errors.New("sealed secret does not open with this cluster's key")

func sealer(clusterSeed []byte) (cipher.AEAD, error) {
	if len(clusterSeed) == 0 {
		return nil, errors.New("the cluster has no signing key yet")
	}
	key := make([]byte, 32)
	if _, err := io.ReadFull(hkdf.New(sha256.New, clusterSeed, nil, []byte(sealInfo)), key); err != nil {
		return nil, err
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

// Seal encrypts a secret (a registry password) with a key derived from the
// cluster's signing seed (AES-256-GCM, HKDF-SHA256); aad binds it to where
// it belongs (namespace and server), so a sealed value moved elsewhere does
// not open.
func Seal(clusterSeed, secret, aad []byte) ([]byte, error) {
	g, err := sealer(clusterSeed)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	nonce := make([]byte, g.NonceSize(), g.NonceSize()+len(secret)+g.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return g.Seal(nonce, nonce, secret, aad), nil
}

// Unseal opens what Seal sealed with the same seed and aad.
func Unseal(clusterSeed, sealed, aad []byte) ([]byte, error) {
	g, err := sealer(clusterSeed)
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
