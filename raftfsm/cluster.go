package raftfsm

import (
	"slices"
	"time"

	"github.com/svc-project/svc/api"
)

// Cert is a PEM certificate chain and its private key.
type Cert struct {
	CertPEM string `json:"certPem"`
	KeyPEM  string `json:"keyPem"`
}

// Init creates the cluster's identity and its default namespace. The first
// leader of a new cluster proposes it once.
type Init struct {
	ClusterID string    `json:"clusterId"`
	Time      time.Time `json:"time"`
	// SigningKey is the Ed25519 seed of the cluster's tokens.
	SigningKey []byte `json:"signingKey"`
}

// CertSet replaces the cluster's HTTPS certificate.
type CertSet struct {
	Cert Cert `json:"cert"`
}

// SigningKeySet gives a cluster initialised without one its token key.
type SigningKeySet struct {
	SigningKey []byte `json:"signingKey"`
}

func (s *State) applyInit(c Init) (any, error) {
	if s.Initialized {
		return nil, ruleErr(ErrAlreadyExists, "cluster %s is already initialised", s.ClusterID)
	}
	if c.ClusterID == "" {
		return nil, ruleErr(ErrInvalid, "cluster id must not be empty")
	}
	if len(c.SigningKey) != 0 && len(c.SigningKey) != 32 {
		return nil, ruleErr(ErrInvalid, "signing key must be a 32-byte Ed25519 seed")
	}
	s.Initialized = true
	s.ClusterID = c.ClusterID
	s.CreatedAt = c.Time
	if len(c.SigningKey) == 32 {
		s.SigningKey = append([]byte(nil), c.SigningKey...)
	}
	if _, ok := s.Namespaces[api.DefaultNamespace]; !ok {
		s.Namespaces[api.DefaultNamespace] = &Namespace{Name: api.DefaultNamespace, CreatedAt: c.Time}
	}
	return nil, nil
}

func (s *State) applyCertSet(c CertSet) (any, error) {
	if c.Cert.CertPEM == "" || c.Cert.KeyPEM == "" {
		return nil, ruleErr(ErrInvalid, "certificate and key must not be empty")
	}
	cert := c.Cert
	s.Cert = &cert
	return nil, nil
}

func (s *State) applySigningKeySet(c SigningKeySet) (any, error) {
	if len(c.SigningKey) != 32 {
		return nil, ruleErr(ErrInvalid, "signing key must be a 32-byte Ed25519 seed")
	}
	if len(s.SigningKey) != 0 {
		return nil, ruleErr(ErrAlreadyExists, "the cluster already has a signing key")
	}
	s.SigningKey = append([]byte(nil), c.SigningKey...)
	return nil, nil
}

// Initialized reports whether the cluster's Init command has been applied,
// and returns the cluster id.
func (f *FSM) Initialized() (bool, string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.Initialized, f.state.ClusterID
}

// SigningKey returns the cluster's token key seed (nil before Init).
func (f *FSM) SigningKey() []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return slices.Clone(f.state.SigningKey)
}

// Cert returns the cluster's HTTPS certificate, if one was uploaded.
func (f *FSM) Cert() (Cert, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.state.Cert == nil {
		return Cert{}, false
	}
	return *f.state.Cert, true
}
