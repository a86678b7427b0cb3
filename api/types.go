package api

import (
	"encoding/json"
	"time"
)

// DefaultNamespace is the namespace every user reaches and every node starts in.
const DefaultNamespace = "svc-default"

// Node phases.
const (
	PhaseReady    = "READY"
	PhaseNotReady = "NOT READY"
)

// NodeTypeWorker is the only node type.
const NodeTypeWorker = "WORKER"

// Raft roles shown in cluster-info.
const (
	RaftLeader   = "leader"
	RaftVoter    = "voter"
	RaftNonvoter = "nonvoter"
)

// HeaderForwardedBy marks a request that one peer forwarded to the leader.
// A peer never forwards a request that carries it. It counts only on a
// request another peer sent over the fabric (its certificate checked); a
// client's is dropped.
const HeaderForwardedBy = "X-Svc-Forwarded-By"

// HeaderNotLeader marks a peer's refusal of a request another peer
// forwarded to it as the leader, which it no longer is: nothing of the
// request ran, so the forwarding peer may send it to the new leader.
const HeaderNotLeader = "X-Svc-Not-Leader"

// HeaderPlainPeer names the calling peer on a cluster running without the
// fabric's TLS (benchmarks only); peers ignore it otherwise.
const HeaderPlainPeer = "X-Svc-Plain-Peer"

// HeaderPeerLevel carries, on every call of one peer to another, the
// command level of the caller's svc (its version is in User-Agent).
const HeaderPeerLevel = "X-Svc-Peer-Level"

// HeaderIndex carries the leader's applied Raft index on the answer to a
// forwarded write; the forwarding peer waits until its replica has applied
// it, so a read through the same peer sees the write.
const HeaderIndex = "X-Svc-Index"

// HeaderPlaceOnly, on a deploy a peer forwards to the leader, asks the
// leader to resolve and place the VM and answer at once (202 Accepted with a
// PlacedDeploy): the forwarding peer waits on its own replica until the VM
// runs, so that a deploy outlives a change of leader while it waits. It
// counts only beside a peer's HeaderForwardedBy.
const HeaderPlaceOnly = "X-Svc-Place-Only"

// PlacedDeploy is the leader's answer to a deploy sent with HeaderPlaceOnly:
// the VM it placed (on the replica at the answer's HeaderIndex) and how long
// the deploy waits for it to run.
type PlacedDeploy struct {
	Namespace     string   `json:"namespace"`
	Name          string   `json:"name"`
	UID           uint64   `json:"uid"`
	TimeoutMillis int64    `json:"timeoutMillis"`
	PortWarnings  []string `json:"portWarnings"`
}

// List is the envelope of every list response.
type List[T any] struct {
	Items []T `json:"items"`
}

// Node is one item of the node list (spec 2.1, plus arch).
type Node struct {
	Name              string `json:"name"`
	Namespace         string `json:"namespace"`
	NodeIP            string `json:"nodeIP"`
	AvailableCPU      int    `json:"availableCpu"`
	AvailableMemory   string `json:"availableMemory"`
	AvailableGPU      int    `json:"availableGpu"`
	AllocatableCPU    int    `json:"allocatableCpu"`
	AllocatableMemory string `json:"allocatableMemory"`
	AllocatableGPU    int    `json:"allocatableGpu"`
	NodeType          string `json:"nodeType"`
	Phase             string `json:"phase"`
	// PhaseReason says why a node is NOT READY (its peer's own words: no
	// answer from the hypervisor, a data dir QEMU cannot reach, ...).
	PhaseReason string `json:"phaseReason,omitempty"`
	// Schedulable is false for a cordoned node: it keeps its VMs and
	// takes no new one.
	Schedulable bool `json:"schedulable"`
	// Pending says the node's peer joined with a token that does not
	// approve it, and awaits an admin's approval (svc node approve).
	Pending bool     `json:"pending,omitempty"`
	Tags    []string `json:"svcTags"`
	Arch    string   `json:"arch"`
	// Hypervisor runs the node's VMs: libvirt, or vz on Macs (where
	// macOS images run).
	Hypervisor string `json:"hypervisor,omitempty"`
	// CPUOvercommit is how many vCPUs the node offers per CPU: allocatableCpu
	// counts vCPUs.
	CPUOvercommit float64 `json:"cpuOvercommit"`
	// CachedImages are the images of the namespace whose content the node
	// holds: a first deploy of one of them there starts at once.
	CachedImages []string `json:"cachedImages"`
	// Templates is how many booted templates of warm VM configs the node
	// holds ready, and TemplateBytes the disk they take (memory files and
	// disks).
	Templates     int   `json:"templates"`
	TemplateBytes int64 `json:"templateBytes"`
	// SharedStorage says whether the node offers namespaces' shared
	// storage (why not, when it does not) and what its folders take.
	SharedStorage NodeSharedStorage `json:"sharedStorage"`
}

// NodeSharedStorage is a node's shared storage.
type NodeSharedStorage struct {
	Offered bool `json:"offered"`
	// Reason says why a node does not offer it.
	Reason string `json:"reason,omitempty"`
	// Usage is what the folder of each namespace takes on the node, as
	// the node last reported (it reports a change of a MiB or more).
	Usage []SharedUsage `json:"usage"`
}

// SharedUsage is what one shared folder takes: namespace's on a node.
type SharedUsage struct {
	Namespace string `json:"namespace,omitempty"`
	Node      string `json:"node,omitempty"`
	UsedBytes int64  `json:"usedBytes"`
}

// TagRequest is the body of the node tag and untag calls.
type TagRequest struct {
	Tag string `json:"tag"`
}

// ClusterPeer is one peer in cluster-info.
type ClusterPeer struct {
	Name    string `json:"name"`
	APIAddr string `json:"apiAddr"`
	Raft    string `json:"raft"`
	// Version is the svc the peer last reported running, and Level the
	// command level it knows (docs/operations.md#upgrades).
	Version string `json:"version,omitempty"`
	Level   int    `json:"level,omitempty"`
}

// ClusterInfo is the body of GET /api/v1/cluster-info.
type ClusterInfo struct {
	APIEndpoint string `json:"apiEndpoint"`
	// TLSEndpoint is the answering peer's API over HTTPS (its certificate
	// of the cluster's CA, or the uploaded one: certData).
	TLSEndpoint           string        `json:"tlsEndpoint,omitempty"`
	APIDomain             string        `json:"apiDomain"`
	CertData              string        `json:"certData"`
	AppClientID           string        `json:"appClientId"`
	BaseOauthEndpoint     string        `json:"baseOauthEndpoint"`
	GPUPassthroughEnabled bool          `json:"gpuPassthroughEnabled"`
	Version               string        `json:"version"`
	ClusterID             string        `json:"clusterId"`
	Leader                string        `json:"leader"`
	Peers                 []ClusterPeer `json:"peers"`
	CreatedAt             *time.Time    `json:"createdAt,omitempty"`
	// Level is the command level of the answering peer's svc.
	Level int `json:"level,omitempty"`
	// Halted, when set, says the answering peer stopped applying the
	// cluster's log (a command its svc does not know): upgrade it.
	Halted string `json:"halted,omitempty"`
}

// ApplyRequest is the body of POST /api/v1/internal/apply: a command one peer
// proposes through the leader (status reports, blob holdings).
type ApplyRequest struct {
	Type byte            `json:"type"`
	Body json.RawMessage `json:"body"`
	// Tokens, with an audit append, are the bearer tokens of its entries'
	// requests, one per entry ("" for none): the leader checks each
	// against its entry's subject and writes none of them anywhere.
	Tokens []string `json:"tokens,omitempty"`
}

// HostUserPath is the leader's route for the users root on a peer's host
// names or removes (svc admin token, svc admin user remove): peers only.
const HostUserPath = "/api/v1/internal/host-users"

// HostUserRequest is its body.
type HostUserRequest struct {
	User   string `json:"user"`
	Admin  bool   `json:"admin,omitempty"`
	Remove bool   `json:"remove,omitempty"`
}

// TrustPath is a peer's own route that tells which peers its replica
// admits (PeerTrust): a peer restarted after others joined asks it when it
// meets a peer it does not know.
const TrustPath = "/api/v1/internal/trust"

// PeerTrust is the admitted peers (name to key id) and removed keys (key id
// to the removal) as of a Raft index.
type PeerTrust struct {
	Index   uint64                 `json:"index"`
	Members map[string]string      `json:"members"`
	Removed map[string]PeerRemoval `json:"removed,omitempty"`
}

// PeerRemoval is a removed peer's key: name, when and by whom.
type PeerRemoval struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
	By   string    `json:"by,omitempty"`
}

// AppliedIndexPath is a peer's own route that tells the index of the last
// command its replica applied (a CommitIndex).
const AppliedIndexPath = "/api/v1/internal/applied-index"

// CommitIndex is the leader's answer on /api/v1/internal/commit-index: the
// index a restarted peer's replica must reach before it serves.
type CommitIndex struct {
	Index uint64 `json:"index"`
}

// Namespace is a namespace record.
type Namespace struct {
	Name      string     `json:"name"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	// Quota, when the namespace has one, and what its VMs take against it
	// (both shown in answers, ignored in a create).
	Quota *Quota `json:"quota,omitempty"`
	Used  *Quota `json:"used,omitempty"`
	// SharedStorage, when the namespace's is on (shown in answers,
	// ignored in a create: PUT .../shared-storage turns it on).
	SharedStorage *SharedStorage `json:"sharedStorage,omitempty"`
	// Aliases are other names every path takes for this namespace (the
	// agents' --namespace-alias: orka-default for svc-default, so that
	// clients that hard-code Orka's default namespace work unchanged).
	Aliases []string `json:"aliases,omitempty"`
}

// Subjects are the users, service accounts ("namespace:name") and
// directory groups (of people who sign in through an OpenID Connect
// provider) of a namespace's role bindings, and the body of add-subject /
// remove-subject.
type Subjects struct {
	Users           []string `json:"users"`
	ServiceAccounts []string `json:"serviceAccounts"`
	Groups          []string `json:"groups,omitempty"`
}

// ServiceAccount is a service account record.
type ServiceAccount struct {
	Name      string    `json:"name"`
	Namespace string    `json:"namespace"`
	CreatedAt time.Time `json:"createdAt"`
}

// TokenRequest asks for a service account token: a Go duration ("720h";
// default 8760h) or none at all.
type TokenRequest struct {
	Duration     string `json:"duration,omitempty"`
	NoExpiration bool   `json:"noExpiration,omitempty"`
}

// TokenResponse is a token and when it expires (null: never).
type TokenResponse struct {
	Token     string     `json:"token"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// NodeNamespaceRequest dedicates a node to a namespace.
type NodeNamespaceRequest struct {
	Namespace string `json:"namespace"`
}

// Message is a plain answer.
type Message struct {
	Message string `json:"message"`
}
