package raftfsm

import (
	"strings"
	"time"
)

// RegistryCredential is how a namespace reaches one registry. The password
// is sealed by the peer that received it (with a key derived from the
// cluster's signing key) before it is proposed: it never stands in plain
// text in the log, snapshots or data dir.
type RegistryCredential struct {
	Namespace      string    `json:"namespace"`
	Server         string    `json:"server"`
	Username       string    `json:"username"`
	SealedPassword []byte    `json:"sealedPassword,omitempty"`
	AllowInsecure  bool      `json:"allowInsecure"`
	CreatedAt      time.Time `json:"createdAt"`
}

func (c *RegistryCredential) clone() *RegistryCredential {
	out := *c
	out.SealedPassword = append([]byte(nil), c.SealedPassword...)
	return &out
}

func (c *RegistryCredential) sortKey() string { return key(c.Namespace, c.Server) }

// Limits of registry credentials and jobs.
const (
	// MaxServerLen bounds a registry server name (host[:port]).
	MaxServerLen = 253
	// MaxCredentialsPerNamespace bounds the registries of a namespace.
	MaxCredentialsPerNamespace = 100
	// MaxJobMessage bounds a job's message.
	MaxJobMessage = 4096
)

// RegistryCredentialSet adds or replaces a namespace's credential.
type RegistryCredentialSet struct {
	Credential RegistryCredential `json:"credential"`
}

// RegistryCredentialDelete removes one.
type RegistryCredentialDelete struct {
	Namespace string `json:"namespace"`
	Server    string `json:"server"`
}

func (s *State) applyRegistryCredentialSet(c RegistryCredentialSet) (any, error) {
	cr := c.Credential.clone()
	switch {
	case cr.Server == "" || len(cr.Server) > MaxServerLen || strings.ContainsAny(cr.Server, "/ \t"):
		return nil, ruleErr(ErrInvalid, "server %q must be a registry host[:port]", cr.Server)
	case len(cr.Username) > 1024 || len(cr.SealedPassword) > 4096:
		return nil, ruleErr(ErrInvalid, "username or password too long")
	}
	if _, ok := s.Namespaces[cr.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", cr.Namespace)
	}
	k := key(cr.Namespace, cr.Server)
	if _, ok := s.RegistryCredentials[k]; !ok {
		n := 0
		for _, o := range s.RegistryCredentials {
			if o.Namespace == cr.Namespace {
				n++
			}
		}
		if n >= MaxCredentialsPerNamespace {
			return nil, ruleErr(ErrConflict, "namespace %q has %d registry credentials, the most it may have", cr.Namespace, n)
		}
	}
	s.RegistryCredentials[k] = cr
	return cr.clone(), nil
}

func (s *State) applyRegistryCredentialDelete(c RegistryCredentialDelete) (any, error) {
	k := key(c.Namespace, c.Server)
	if _, ok := s.RegistryCredentials[k]; !ok {
		return nil, ruleErr(ErrNotFound, "no registry credential for %q in namespace %q", c.Server, c.Namespace)
	}
	delete(s.RegistryCredentials, k)
	return nil, nil
}

func regCreds(s *State) map[string]*RegistryCredential { return s.RegistryCredentials }

// RegistryCredentials returns a namespace's registry credentials, sorted.
func (f *FSM) RegistryCredentials(ns string) []RegistryCredential {
	return list(f, regCreds, func(c *RegistryCredential) bool { return c.Namespace == ns })
}

// RegistryCredential returns a namespace's credential for a server.
func (f *FSM) RegistryCredential(ns, server string) (RegistryCredential, bool) {
	return get(f, regCreds, key(ns, server))
}
