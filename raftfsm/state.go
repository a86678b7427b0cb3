package raftfsm

import (
	"net"
	"strconv"
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
	// SigningKey is the Ed25519 seed the cluster signs tokens with.
	SigningKey []byte `json:"signingKey,omitempty"`
	// Cert is the certificate every peer serves HTTPS with.
	Cert *Cert `json:"cert,omitempty"`
	// RegistryCredentials are keyed by "namespace/server".
	RegistryCredentials map[string]*RegistryCredential `json:"registryCredentials"`
	// Jobs (pushes and pulls) are keyed by "namespace/name".
	Jobs map[string]*Job `json:"jobs"`
	// Catalogs are the OCI repositories listed as remote images and ISOs.
	Catalogs []string `json:"catalogs,omitempty"`

	// idx is derived from the above (see index); never serialized.
	idx *index
}

// User is a person an admin named (by minting a token or binding them).
type User struct {
	Name      string    `json:"name"`
	Admin     bool      `json:"admin"`
	CreatedAt time.Time `json:"createdAt"`
	// UID tells this user from an earlier one of the same name: the index of
	// the log entry that named it. Tokens carry it, so a removal voids every
	// token issued before it (0: named before UIDs existed).
	UID uint64 `json:"uid,omitempty"`
}

// Cert is a PEM certificate chain and its private key.
type Cert struct {
	CertPEM string `json:"certPem"`
	KeyPEM  string `json:"keyPem"`
}

// Blob is a content-addressed file (an image disk) and the nodes holding it.
type Blob struct {
	Digest    string   `json:"digest"`
	SizeBytes int64    `json:"sizeBytes"`
	Holders   []string `json:"holders"`
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
	}
	s.idx = buildIndex(s)
	return s
}

// Namespace isolates VMs, configs, images and nodes.
type Namespace struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
}

// Capacity is what a node offers to VMs.
type Capacity struct {
	CPU         int   `json:"cpu"`
	MemoryBytes int64 `json:"memoryBytes"`
	GPU         int   `json:"gpu"`
}

// NodeFacts are what a peer reports about itself through gossip.
type NodeFacts struct {
	Addr       string   `json:"addr"`
	APIAddr    string   `json:"apiAddr"`
	RaftAddr   string   `json:"raftAddr"`
	GossipAddr string   `json:"gossipAddr"`
	TLSPort    int      `json:"tlsPort,omitempty"`
	Arch       string   `json:"arch"`
	Version    string   `json:"version"`
	Capacity   Capacity `json:"capacity"`
	// CPUOvercommit is how many vCPUs the node offers per CPU (0: 1).
	CPUOvercommit float64 `json:"cpuOvercommit,omitempty"`
}

// OwnPorts are the ports the node's peer listens on at its address (API,
// HTTPS, Raft, gossip): no VM may take them.
func (f NodeFacts) OwnPorts() map[int]bool {
	out := map[int]bool{}
	if f.TLSPort > 0 {
		out[f.TLSPort] = true
	}
	for _, a := range []string{f.APIAddr, f.RaftAddr, f.GossipAddr} {
		if _, port, err := net.SplitHostPort(a); err == nil {
			if n, err := strconv.Atoi(port); err == nil && n > 0 {
				out[n] = true
			}
		}
	}
	return out
}

// Node is one peer of the cluster as the replicated state knows it. Its facts
// come from the peer's gossip report; tags, namespace and phase are cluster
// decisions.
type Node struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Tags      []string `json:"tags"`
	NodeFacts

	Phase       string    `json:"phase"`
	PhaseReason string    `json:"phaseReason,omitempty"`
	PhaseSince  time.Time `json:"phaseSince"`
	JoinedAt    time.Time `json:"joinedAt"`
}

// clone returns a deep copy.
func (n *Node) clone() *Node {
	c := *n
	c.Tags = make([]string, len(n.Tags))
	copy(c.Tags, n.Tags)
	return &c
}

// HasTag reports whether the node carries tag.
func (n *Node) HasTag(tag string) bool {
	for _, t := range n.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// ServiceAccount is a non-human subject of a namespace.
type ServiceAccount struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	CreatedAt time.Time `json:"createdAt"`
	// UID is the index of the log entry that created it (see User.UID).
	UID uint64 `json:"uid,omitempty"`
}

// RoleBinding lists the subjects bound to a namespace.
type RoleBinding struct {
	Namespace       string   `json:"namespace"`
	Users           []string `json:"users"`
	ServiceAccounts []string `json:"serviceAccounts"`
}

// Usage is what the VMs placed on a node take.
type Usage struct {
	CPU         int   `json:"cpu"`
	MemoryBytes int64 `json:"memoryBytes"`
	GPU         int   `json:"gpu"`
}
