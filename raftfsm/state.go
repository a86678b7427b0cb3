package raftfsm

import (
	"time"
)

// State is the whole replicated model. Only the FSM changes it, and only by
// applying commands; readers get copies through the FSM's view methods.
type State struct {
	ClusterID   string    `json:"clusterId"`
	CreatedAt   time.Time `json:"createdAt"`
	Initialized bool      `json:"initialized"`

	Namespaces map[string]*Namespace `json:"namespaces"`
	Nodes      map[string]*Node      `json:"nodes"`

	// The following are keyed by "namespace/name" and filled by later
	// capabilities (VMs, images, tenancy); they are part of every snapshot.
	VMs       map[string]*VM       `json:"vms"`
	VMConfigs map[string]*VMConfig `json:"vmConfigs"`
	Images    map[string]*Image    `json:"images"`
	// ISOs are installer images, kept as Image records (no arch or format).
	ISOs            map[string]*Image          `json:"isos"`
	ServiceAccounts map[string]*ServiceAccount `json:"serviceAccounts"`
	// RoleBindings is keyed by namespace.
	RoleBindings map[string]*RoleBinding `json:"roleBindings"`
	// Blobs is keyed by digest: which nodes hold each image blob.
	Blobs map[string]*Blob `json:"blobs"`
	// Users are the people admins have named.
	Users map[string]*User `json:"users"`
	// Fabric is the trust between peers: the CA, the wrapped keys, the
	// admitted and removed peers, the join tokens (nil before Init).
	Fabric *Fabric `json:"fabric,omitempty"`
	// Cert is the certificate every peer serves HTTPS with.
	Cert *Cert `json:"cert,omitempty"`
	// RegistryCredentials are keyed by "namespace/server".
	RegistryCredentials map[string]*RegistryCredential `json:"registryCredentials"`
	// Jobs (pushes and pulls) are keyed by "namespace/name".
	Jobs map[string]*Job `json:"jobs"`
	// OIDCProviders are the OpenID Connect providers people sign in with,
	// keyed by name.
	OIDCProviders map[string]*OIDCProvider `json:"oidcProviders"`
	// RunnerPools are keyed by "namespace/name"; RunnerJobs by
	// "namespace/pool/job id".
	RunnerPools map[string]*RunnerPool `json:"runnerPools"`
	RunnerJobs  map[string]*RunnerJob  `json:"runnerJobs"`
	// Catalogs are the OCI repositories listed as remote images and ISOs.
	Catalogs []string `json:"catalogs,omitempty"`
	// Audit is the audit log (see AuditEntry), oldest first; AuditSeq the
	// number of the last entry it took.
	Audit    []AuditEntry `json:"audit,omitempty"`
	AuditSeq uint64       `json:"auditSeq,omitempty"`
	// AuditAnonymous are the entries of calls without a valid token, kept
	// apart and bounded (MaxAnonymousAudit); AuditAnonymousSeen counts all
	// it took.
	AuditAnonymous     []AuditEntry `json:"auditAnonymous,omitempty"`
	AuditAnonymousSeen uint64       `json:"auditAnonymousSeen,omitempty"`

	// idx is derived from the above (see index); never serialized.
	idx *index
}

// NewState returns an empty, uninitialised state.
func NewState() *State {
	s := &State{
		Namespaces:      map[string]*Namespace{},
		Nodes:           map[string]*Node{},
		VMs:             map[string]*VM{},
		VMConfigs:       map[string]*VMConfig{},
		Images:          map[string]*Image{},
		ISOs:            map[string]*Image{},
		ServiceAccounts: map[string]*ServiceAccount{},
		RoleBindings:    map[string]*RoleBinding{},
		Blobs:           map[string]*Blob{},
		Users:           map[string]*User{},

		RegistryCredentials: map[string]*RegistryCredential{},
		Jobs:                map[string]*Job{},
		OIDCProviders:       map[string]*OIDCProvider{},
		RunnerPools:         map[string]*RunnerPool{},
		RunnerJobs:          map[string]*RunnerJob{},
	}
	s.idx = buildIndex(s)
	return s
}
