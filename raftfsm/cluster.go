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
// leader of a new cluster proposes it once, with what the peer that formed
// the cluster made: its CA, the keys wrapped under the cluster secret, and
// itself as the first admitted peer.
type Init struct {
	ClusterID string    `json:"clusterId"`
	Time      time.Time `json:"time"`
	// CACert is the CA's certificate (DER); CAKey, SigningKey (the Ed25519
	// seed of the cluster's tokens) and GossipKeys are wrapped under the
	// cluster secret.
	CACert     []byte       `json:"caCert"`
	CAKey      []byte       `json:"caKey"`
	SigningKey []byte       `json:"signingKey"`
	GossipKeys []byte       `json:"gossipKeys"`
	First      PeerIdentity `json:"first"`
}

// CertSet replaces the cluster's HTTPS certificate.
type CertSet struct {
	Cert Cert `json:"cert"`
}

// SigningKeySet gave a cluster initialised without one its token key; the
// key now comes with Init, wrapped, and the command is refused.
type SigningKeySet struct {
	SigningKey []byte `json:"signingKey"`
}

func (s *State) applyInit(index uint64, c Init) (any, error) {
	if s.Initialized {
		return nil, ruleErr(ErrAlreadyExists, "cluster %s is already initialised", s.ClusterID)
	}
	if c.ClusterID == "" {
		return nil, ruleErr(ErrInvalid, "cluster id must not be empty")
	}
	if len(c.CACert) == 0 || len(c.CAKey) == 0 || len(c.SigningKey) == 0 || len(c.GossipKeys) == 0 {
		return nil, ruleErr(ErrInvalid, "a cluster is initialised with its CA, its wrapped keys and its gossip keys")
	}
	if c.First.Name == "" || c.First.KeyID == "" || c.First.RaftAddr == "" {
		return nil, ruleErr(ErrInvalid, "a cluster is initialised with the peer that formed it")
	}
	s.Initialized = true
	s.ClusterID = c.ClusterID
	s.CreatedAt = c.Time
	first := c.First
	first.AdmittedAt, first.Token = c.Time, ""
	s.Fabric = &Fabric{
		CACert: slices.Clone(c.CACert), CAKey: slices.Clone(c.CAKey), SigningKey: slices.Clone(c.SigningKey),
		GossipKeys: slices.Clone(c.GossipKeys), GossipEpoch: 1,
		Peers: map[string]*PeerIdentity{first.Name: &first}, TrustIndex: index,
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

func (s *State) applySigningKeySet(SigningKeySet) (any, error) {
	return nil, ruleErr(ErrInvalid, "a signing key comes with the cluster's Init, wrapped under the cluster secret")
}

// Initialized reports whether the cluster's Init command has been applied,
// and returns the cluster id.
func (f *FSM) Initialized() (bool, string) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.Initialized, f.state.ClusterID
}

// WrappedSigningKey returns the cluster's token key seed as the state keeps
// it, wrapped under the cluster secret (nil before Init).
func (f *FSM) WrappedSigningKey() []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.state.Fabric == nil {
		return nil
	}
	return slices.Clone(f.state.Fabric.SigningKey)
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
