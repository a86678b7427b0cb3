package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// The API asks the peer it runs on for what its handlers need through the
// small interfaces below, each named for its use (Config has one field a
// role). The peer serves them all; the tests serve them from one replica.

// Replica is the local copy of the cluster state and the peer it is on.
type Replica interface {
	// Name is this peer's node name.
	Name() string
	// FSM is the local replica of the cluster state.
	FSM() *raftfsm.FSM
}

// Consensus is the Raft group as handlers use it: who leads, writes, and
// what consistent reads wait for.
type Consensus interface {
	// IsLeader reports whether this peer is the Raft leader.
	IsLeader() bool
	// WaitLeader returns the leader's name and the address peers call it
	// at ("host:port", see Peers.PeerAddr;
	// empty when this peer leads), waiting a bounded time for one to be
	// known; the error says why none is.
	WaitLeader(ctx context.Context) (name, addr string, err error)
	// VerifyLeader confirms with a quorum that this peer still leads.
	VerifyLeader(ctx context.Context) error
	// Apply proposes a command on this peer and returns the FSM's answer;
	// a peer that does not lead refuses it (raftfsm.ErrNotLeader, a 503
	// the caller retries). The API's writes reach the leader before they
	// are proposed, so one that lost its leadership meanwhile says so
	// rather than sending the command on in its own name.
	Apply(ctx context.Context, t raftfsm.Type, body any) (any, error)
	// Propose proposes a command this peer may propose for itself
	// (raftfsm.Type.PeerProposable), through the leader wherever it is.
	Propose(ctx context.Context, t raftfsm.Type, body any) error
	// AppliedIndex returns, if this peer is a leader that has applied the
	// entries of earlier terms (waiting for that, bounded by ctx), the index
	// of the last command it applied (every acknowledged write is at or
	// below it); an error otherwise.
	AppliedIndex(ctx context.Context) (uint64, error)
}

// Propagation waits for a write to reach the other peers' replicas (a
// deleted service account's tokens stop working on each once it has).
type Propagation interface {
	// WaitPeersApplied waits a bounded time until every other live peer's
	// replica has applied index, and returns those that did not in time.
	WaitPeersApplied(ctx context.Context, index uint64) []string
}

// Readiness says whether the replica has caught up with the cluster since
// the peer started; until then only open routes are served.
type Readiness interface {
	CaughtUp() bool
	// WaitCaughtUp waits, bounded by ctx, until CaughtUp, and reports it.
	WaitCaughtUp(ctx context.Context) bool
	// SyncReplica waits until the replica has applied every command the
	// leader had applied when asked.
	SyncReplica(ctx context.Context) error
}

// PeerLinks is how the API talks to the cluster's other peers and knows
// them when they call: over the fabric (TLS both ways, certificates
// checked).
type PeerLinks interface {
	// PeerAddr returns where peers call a peer (host:port), "" when
	// unknown; PeerScheme is the scheme ("https"); PeerTransport makes the
	// calls, with this peer's certificate.
	PeerAddr(name string) string
	PeerScheme() string
	PeerTransport() http.RoundTripper
	// PeerOf names the peer that sent a request over the fabric (false for
	// any other caller, whatever its headers or token).
	PeerOf(r *http.Request) (string, bool)
}

// Peers is what the API knows of the cluster's peers.
type Peers interface {
	// IsPeer reports whether ip is the address of a peer of the cluster
	// (peers are never refused for the connection limits).
	IsPeer(ip string) bool
	// ClusterInfo describes the cluster as this peer sees it.
	ClusterInfo(ctx context.Context) api.ClusterInfo
}

// Membership admits and removes peers and keeps the fabric's keys.
type Membership interface {
	// CreateJoinToken makes a join token valid for ttl admitting uses
	// hosts, made by by; it returns the token and its record.
	CreateJoinToken(ctx context.Context, ttl time.Duration, uses int, autoApprove bool, by string) (string, raftfsm.JoinToken, error)
	// RemoveNode removes a peer for good.
	RemoveNode(ctx context.Context, name, by string) error
	// Approve approves a peer admitted pending.
	Approve(ctx context.Context, name, by string) (raftfsm.PeerIdentity, error)
	// RotateGossipKey replaces the gossip key on every live peer.
	RotateGossipKey(ctx context.Context) error
}

// Placer places a deploy's VM; it runs on the leader.
type Placer interface {
	// Place chooses a node, ports and a name for a VM and records it.
	Place(ctx context.Context, p scheduler.Placement) (raftfsm.VM, error)
}

// Jobs starts registry jobs; they are created on the leader.
type Jobs interface {
	// CreateJob records a push or pull: it names the job and picks the peer
	// that carries it out (a VM's host, a peer that holds an image).
	CreateJob(ctx context.Context, j raftfsm.Job) (raftfsm.Job, error)
	// PullRemote starts a job copying a remote image or ISO (typ
	// api.RemoteTypeImage or RemoteTypeISO) into the namespace.
	PullRemote(ctx context.Context, ns, typ, name, newName, owner string) (raftfsm.Job, error)
}

// Guests works inside the VMs this peer hosts (node/host.Host); each
// method refuses a VM another peer hosts.
type Guests interface {
	// Exec runs a program in the VM's guest through its agent.
	Exec(ctx context.Context, vm raftfsm.VM, c hypervisor.ExecCommand) (hypervisor.ExecResult, error)
	// GuestPort returns a host address reaching the guest's TCP port
	// until release is called.
	GuestPort(ctx context.Context, vm raftfsm.VM, port int) (addr string, release func(), err error)
	// ResizeDisk grows the VM's disk to bytes and records it; it returns
	// the size the disk had (hypervisor.ErrShrink for a smaller size).
	ResizeDisk(ctx context.Context, vm raftfsm.VM, bytes int64) (int64, error)
}

// Registries reads OCI registries with a namespace's credentials.
type Registries interface {
	// ResolveImage reads a registry reference of a deploy and returns the
	// image to start from: recorded already, or (an svc disk) not yet, for
	// the VM's host to pull and record. Its errors come from ocidisk.
	ResolveImage(ctx context.Context, ns, reference, owner string) (raftfsm.Image, error)
	// RemoteImages lists the remote catalogs' tags.
	RemoteImages(ctx context.Context, ns string) ([]api.RemoteImage, error)
}
