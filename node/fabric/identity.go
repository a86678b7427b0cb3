package fabric

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Files of a peer's identity in its fabric directory (<data-dir>/fabric,
// mode 0700; every file 0600 but the CA's certificate).
const (
	fileCluster = "cluster.json"
	fileCA      = "ca.pem"
	fileCert    = "node.pem"
	fileKey     = "node-key.pem"
	fileSecret  = "cluster.secret"
	fileGossip  = "gossip-keys.json"
	// FileTrust is the trust file (OpenTrust).
	FileTrust = "trust.json"
)

// ErrNoIdentity is returned by LoadIdentity for a data dir that holds no
// peer identity (a host that has not formed or joined a cluster).
var ErrNoIdentity = errors.New("this data dir holds no cluster identity")

// Identity is what makes a host a peer of one cluster: the cluster's CA
// certificate, the peer's own key and certificate, and the cluster secret.
type Identity struct {
	Dir       string
	ClusterID string
	Name      string
	CA        *x509.Certificate
	Key       *ecdsa.PrivateKey
	keyID     string

	mu   sync.RWMutex
	cert *tls.Certificate
	// secret is the cluster secret (SecretSize bytes), or nil on a peer
	// admitted pending that has not been approved yet.
	secret []byte
}

type clusterFile struct {
	ClusterID string `json:"clusterId"`
	Name      string `json:"name"`
}

// NewIdentity assembles an identity from its parts (a new one, to Save).
func NewIdentity(dir, clusterID, name string, caDER []byte, key *ecdsa.PrivateKey, certDER, secret []byte) (*Identity, error) {
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	id := &Identity{Dir: dir, ClusterID: clusterID, Name: name, CA: ca, Key: key, secret: slices.Clone(secret)}
	if id.keyID, err = KeyID(key.Public()); err != nil {
		return nil, err
	}
	if err := id.setCert(certDER); err != nil {
		return nil, err
	}
	return id, nil
}

// LoadIdentity reads the identity in dir; ErrNoIdentity when there is none.
func LoadIdentity(dir string) (*Identity, error) {
	b, err := os.ReadFile(filepath.Join(dir, fileCluster))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoIdentity
	}
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err)
	}
	var cf clusterFile
	if err := json.Unmarshal(b, &cf); err != nil {
		return nil, fmt.Errorf("identity %s: %w", fileCluster, err)
	}
	read := func(name string) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("identity: %w", err)
		}
		return b, nil
	}
	caPEM, err := read(fileCA)
	if err != nil {
		return nil, err
	}
	certPEM, err := read(fileCert)
	if err != nil {
		return nil, err
	}
	keyPEM, err := read(fileKey)
	if err != nil {
		return nil, err
	}
	// A peer admitted pending has no secret until it is approved.
	secret, err := os.ReadFile(filepath.Join(dir, fileSecret))
	switch {
	case errors.Is(err, os.ErrNotExist):
		secret = nil
	case err != nil:
		return nil, fmt.Errorf("identity: %w", err)
	case len(secret) != SecretSize:
		return nil, fmt.Errorf("identity: %s is not a cluster secret", fileSecret)
	}
	ca, err := ParseCert(caPEM)
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", fileCA, err)
	}
	cert, err := ParseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", fileCert, err)
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("identity %s: %w", fileKey, err)
	}
	return NewIdentity(dir, cf.ClusterID, cf.Name, ca.Raw, key, cert.Raw, secret)
}

// Save writes every file of the identity (the directory is made 0700).
// The cluster file goes last: an identity is whole once it is there.
func (id *Identity) Save() error {
	if err := os.MkdirAll(id.Dir, 0o700); err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	keyPEM, err := EncodeKey(id.Key)
	if err != nil {
		return err
	}
	cf, err := json.Marshal(clusterFile{ClusterID: id.ClusterID, Name: id.Name})
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		b    []byte
		mode os.FileMode
	}{
		{fileCA, EncodeCert(id.CA.Raw), 0o644},
		{fileKey, keyPEM, 0o600},
		{fileCert, EncodeCert(id.Certificate().Leaf.Raw), 0o600},
		{fileSecret, id.Secret(), 0o600},
		{fileCluster, cf, 0o600},
	} {
		if f.name == fileSecret && f.b == nil {
			continue // pending: no secret yet
		}
		if err := writeFileAtomic(filepath.Join(id.Dir, f.name), f.b, f.mode); err != nil {
			return err
		}
	}
	return nil
}

// Secret is the cluster secret, or nil on a peer admitted pending that has
// not been approved yet (ErrNoSecret from what needs it).
func (id *Identity) Secret() []byte {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return id.secret
}

// ErrNoSecret is returned for what needs the cluster secret on a peer that
// awaits an admin's approval.
var ErrNoSecret = errors.New("this peer awaits an admin's approval (svc node approve): it holds no cluster secret")

// SetSecret keeps the cluster secret a peer got once approved, in memory
// and in its data dir (0600).
func (id *Identity) SetSecret(secret []byte) error {
	if len(secret) != SecretSize {
		return fmt.Errorf("identity: %d bytes are not a cluster secret", len(secret))
	}
	if err := writeFileAtomic(filepath.Join(id.Dir, fileSecret), secret, 0o600); err != nil {
		return err
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	id.secret = slices.Clone(secret)
	return nil
}

// KeyID names the peer's public key.
func (id *Identity) KeyID() string { return id.keyID }

// CAFingerprint is the CA certificate's fingerprint (what join tokens carry).
func (id *Identity) CAFingerprint() string { return Fingerprint(id.CA.Raw) }

// Certificate is the peer's current certificate, with the CA's after it.
func (id *Identity) Certificate() *tls.Certificate {
	id.mu.RLock()
	defer id.mu.RUnlock()
	return id.cert
}

func (id *Identity) setCert(certDER []byte) error {
	leaf, err := x509.ParseCertificate(certDER)
	if err != nil {
		return fmt.Errorf("peer certificate: %w", err)
	}
	if leaf.Subject.CommonName != id.Name {
		return fmt.Errorf("peer certificate names %q, not %q", leaf.Subject.CommonName, id.Name)
	}
	if kid, err := KeyID(leaf.PublicKey); err != nil || kid != id.keyID {
		return errors.New("peer certificate is not for this peer's key")
	}
	if err := leaf.CheckSignatureFrom(id.CA); err != nil {
		return fmt.Errorf("peer certificate is not the cluster CA's: %w", err)
	}
	c := &tls.Certificate{Certificate: [][]byte{certDER, id.CA.Raw}, PrivateKey: id.Key, Leaf: leaf}
	id.mu.Lock()
	id.cert = c
	id.mu.Unlock()
	return nil
}

// Renew replaces the peer's certificate with certDER (of the same key)
// and keeps it in the identity's directory.
func (id *Identity) Renew(certDER []byte) error {
	if err := id.setCert(certDER); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(id.Dir, fileCert), EncodeCert(certDER), 0o600)
}

// NeedsRenewal reports whether the certificate has less than a third of its
// life left at now, or does not name every address in ips.
func (id *Identity) NeedsRenewal(now time.Time, ips []net.IP) bool {
	leaf := id.Certificate().Leaf
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	if leaf.NotAfter.Sub(now) < life/3 {
		return true
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
			return true
		}
	}
	return false
}

// GossipKeys is the gossip keyring as a peer keeps it: the keys, and which
// one it encrypts with.
type GossipKeys struct {
	Keys    [][]byte `json:"keys"`
	Primary int      `json:"primary"`
}

// Validate checks the keyring's shape (memberlist takes 16, 24 or 32-byte
// keys; svc makes 32).
func (g GossipKeys) Validate() error {
	if len(g.Keys) == 0 || len(g.Keys) > 8 {
		return errors.New("a gossip keyring has 1 to 8 keys")
	}
	if g.Primary < 0 || g.Primary >= len(g.Keys) {
		return errors.New("the gossip keyring's primary key is not one of its keys")
	}
	for _, k := range g.Keys {
		if len(k) != 32 {
			return errors.New("gossip keys are 32 bytes")
		}
	}
	return nil
}

// SaveGossipKeys keeps the keyring in dir.
func SaveGossipKeys(dir string, g GossipKeys) error {
	if err := g.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, fileGossip), b, 0o600)
}

// LoadGossipKeys reads the keyring SaveGossipKeys kept.
func LoadGossipKeys(dir string) (GossipKeys, error) {
	var g GossipKeys
	b, err := os.ReadFile(filepath.Join(dir, fileGossip))
	if err != nil {
		return g, fmt.Errorf("gossip keys: %w", err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return g, fmt.Errorf("gossip keys: %w", err)
	}
	return g, g.Validate()
}
