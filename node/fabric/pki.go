package fabric

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Lifetimes of the cluster's certificates. A peer renews its own
// certificate once less than a third of its life is left.
const (
	CALifetime   = 10 * 365 * 24 * time.Hour
	CertLifetime = 24 * time.Hour
	// clockSkew backdates every certificate, so that a peer whose clock is a
	// little behind accepts it at once.
	clockSkew = 5 * time.Minute
)

// NewKey returns a fresh ECDSA P-256 key: what every certificate of the
// cluster uses (browsers and curl accept it, unlike Ed25519).
func NewKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate key: %w", err)
	}
	return k, nil
}

// NewCA makes the certificate authority of a new cluster: a self-signed
// certificate naming the cluster, valid for CALifetime.
func NewCA(clusterID string, now time.Time) (certDER []byte, key *ecdsa.PrivateKey, err error) {
	key, err = NewKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "svc cluster " + clusterID + " CA", Organization: []string{"svc"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	certDER, err = x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("make the cluster CA: %w", err)
	}
	return certDER, key, nil
}

// Issue signs a certificate for peer name at the given addresses, for its
// public key pub, valid for ttl from now. It serves as both a TLS server and
// a TLS client certificate: a peer is both to every other.
func Issue(ca *x509.Certificate, caKey crypto.Signer, name string, ips []net.IP, pub crypto.PublicKey, now time.Time, ttl time.Duration) ([]byte, error) {
	if name == "" {
		return nil, errors.New("issue: a peer certificate needs a name")
	}
	notAfter := now.Add(ttl)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"svc"}},
		DNSNames:     []string{name},
		IPAddresses:  ips,
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("issue a certificate for %s: %w", name, err)
	}
	return der, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

// KeyID names a public key: "sha256:" and the hex SHA-256 of its
// SubjectPublicKeyInfo. The cluster records each peer's KeyID.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("key id: %w", err)
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Fingerprint is the SHA-256 of a certificate's DER bytes, in hex: what a
// join token carries of the cluster's CA.
func Fingerprint(certDER []byte) string {
	sum := sha256.Sum256(certDER)
	return hex.EncodeToString(sum[:])
}

// EncodeCert and EncodeKey write PEM.
func EncodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// EncodeKey writes an ECDSA private key as PKCS #8 PEM.
func EncodeKey(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ParseCert reads one PEM certificate.
func ParseCert(pemBytes []byte) (*x509.Certificate, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "CERTIFICATE" {
		return nil, errors.New("not a PEM certificate")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse certificate: %w", err)
	}
	return c, nil
}

// ParseKey reads a PKCS #8 PEM ECDSA private key.
func ParseKey(pemBytes []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil || b.Type != "PRIVATE KEY" {
		return nil, errors.New("not a PEM private key")
	}
	return parseKeyDER(b.Bytes)
}

func parseKeyDER(der []byte) (*ecdsa.PrivateKey, error) {
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("parse key: not an ECDSA key")
	}
	return ek, nil
}

// MarshalKeyDER and ParseKeyDER carry the CA's key as bytes (wrapped under
// the cluster secret in the replicated state).
func MarshalKeyDER(k *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return der, nil
}

// ParseKeyDER reads what MarshalKeyDER wrote.
func ParseKeyDER(der []byte) (*ecdsa.PrivateKey, error) { return parseKeyDER(der) }

// ParsePublicKey reads a DER SubjectPublicKeyInfo (what a joining peer
// sends of its key).
func ParsePublicKey(der []byte) (crypto.PublicKey, error) {
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("parse public key: %w", err)
	}
	if _, ok := pub.(*ecdsa.PublicKey); !ok {
		return nil, errors.New("parse public key: not an ECDSA key")
	}
	return pub, nil
}
