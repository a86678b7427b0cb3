package peer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"runtime"
	"time"

	"github.com/svc-project/svc/httpapi"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// Config configures a peer.
type Config struct {
	// Name is the node name and Raft server id; it must stay the same across
	// restarts for the peer to rejoin as itself.
	Name    string
	DataDir string
	// Bind is the IP address Raft, gossip and the API listen on and advertise.
	Bind string
	// Ports; 0 picks a free port (tests). TLSPort serves the API over HTTPS
	// once a certificate is uploaded.
	APIPort, TLSPort, RaftPort, GossipPort int
	// BootstrapExpect 1 forms a new cluster on a host that is not a peer
	// yet (its CA, keys and first member); 0 joins one. A cluster forms on
	// one peer; the others join it with a join token.
	BootstrapExpect int
	// Join lists gossip addresses (host:port) of running peers.
	Join []string
	// JoinToken admits a host that is not a peer yet (svc cluster
	// join-token create); a peer restarted with its data dir needs none.
	JoinToken string
	// Restore, with BootstrapExpect 1 on a host that is not a peer yet, is
	// a snapshot file (svc cluster snapshot save) the new cluster is formed
	// from: its records, CA and keys.
	Restore string
	// Recover makes this peer, which lost its cluster's majority for good,
	// the one voter of its cluster, once no leader answered it for
	// RecoverProbe (default raftstore.DefaultRecoverProbe).
	Recover      bool
	RecoverProbe time.Duration
	// PlainPeers runs Raft, gossip and the peers' calls to each other
	// without TLS or encryption, peers naming themselves in a header. It
	// exists only so that benchmarks can state what the fabric costs; svc
	// agent never sets it.
	PlainPeers bool
	// Capacity is what the peer offers to VMs; its CPUs are multiplied by
	// CPUOvercommit (vCPUs per CPU, default 1) in what the peer reports.
	Capacity      raftfsm.Capacity
	CPUOvercommit float64
	Arch          string
	// Hypervisor names what runs the VMs (libvirt, vz, fake), for
	// placement.
	Hypervisor string
	Version    string

	// Local selects short gossip timeouts for peers on one host.
	Local bool
	// RaftTiming tunes Raft's timeouts.
	RaftTiming raftstore.Timing
	// ReconcileInterval is how often the leader re-checks membership (default 1 s).
	ReconcileInterval time.Duration
	// RunnerPollInterval is how often a runner pool asks GitHub for the
	// jobs its webhook may have missed (default 30 s).
	RunnerPollInterval time.Duration
	// Replicas, when positive, bounds the Raft group to its voters and
	// that many non-voting replicas; every other peer follows the log
	// through a member (node/follow, peer/follow.go). Give every peer of a
	// cluster the same. 0: every peer is a Raft member. At most
	// MaxReplicas.
	Replicas int
	// ReplaceAfter is how long a replica may be dead before the leader
	// puts another in its place (0: leader.DefaultReplaceAfter, 30 s).
	ReplaceAfter time.Duration
	// ReapAfter is how long a peer must be dead before the leader removes it
	// from the Raft configuration for good (default 72 h).
	ReapAfter time.Duration
	// NotReadyGrace is how long a new leader waits for gossip to show a node
	// before it marks a node it cannot see NOT READY (default 10 s).
	NotReadyGrace time.Duration
	// JoinTimeout bounds the retries of the first join (default 5 min).
	JoinTimeout time.Duration
	// LeaderWait bounds how long a write waits for a leader (default 5 s).
	LeaderWait time.Duration
	// Driver runs this peer's VMs; without one the node stays NOT READY.
	Driver hypervisor.Driver
	// VMInterval is how often the VM reconciler runs at the latest (default 5 s).
	VMInterval time.Duration
	// HealthInterval is how often the hypervisor is probed (default 5 s).
	HealthInterval time.Duration
	// BlobGCInterval is how often unreferenced image blobs are collected
	// (default 10 min); BlobGCGrace is how old such a blob must be (default
	// 1 h), so that a blob whose record is on its way stays.
	BlobGCInterval, BlobGCGrace time.Duration
	// BlobReleaseGrace is how old a blob this node no longer holds (its
	// image's cache here was freed) must be before it is removed (default
	// 1 min): a blob being recorded as held, fetched a moment ago, is
	// younger.
	BlobReleaseGrace time.Duration
	// APILimits bound the API's connections and body reads (zero fields
	// take httpapi's defaults).
	APILimits httpapi.Limits
	// ChunkMiB is the size of the chunks this peer cuts a disk into when it
	// pushes it to a registry (default ocidisk.DefaultChunkSize, 64 MiB).
	ChunkMiB int
	// RegistryAllow lists the registries this peer may contact beyond
	// public addresses: CIDRs, addresses and host names (ocidisk.ParseEgress).
	// Private, loopback and link-local addresses are refused otherwise.
	RegistryAllow []string
	// MaxJobs bounds the jobs (pushes, pulls) this peer runs at once; the
	// others wait their turn, oldest first (default 4).
	MaxJobs int
	// MaxUploadStreams bounds the chunks of images this peer serves to
	// other peers at once (default 4), so that serving never takes its
	// VMs' whole link; a peer asked for more answers busy and the asker
	// goes to another peer.
	MaxUploadStreams int
	// CorruptServedChunks flips a byte of every image chunk this peer
	// serves: a test hook standing for a peer with a bad disk.
	CorruptServedChunks bool
	// Templates bounds the booted templates this node keeps for warm VM
	// configs (0: none, and those an earlier run left are removed);
	// TemplatesMaxBytes their disk use (default 16 GiB).
	Templates         int
	TemplatesMaxBytes int64
	// HotMaxMemory caps the memory this node's hot guests take together
	// (hot pools of warm configs): 0 for an eighth of the node's memory,
	// negative for none.
	HotMaxMemory int64
	// HotFillTimeout bounds the restore of one hot guest and its identity
	// step (default 5 minutes).
	HotFillTimeout time.Duration
	// NamespaceAlias, when set, is another name of the default namespace
	// in every API path (the agent's default: orka-default).
	NamespaceAlias string
	// AuditEntries is how many API writes the audit log keeps (default
	// 10000; the leader's is the one applied).
	AuditEntries int
	// DiskFloor is the free space of the data dir's disk that no work may
	// take: Raft's log and snapshots and the peer's logs live there
	// (default diskbudget.DefaultFloor, 1 GiB).
	DiskFloor int64
	// TemplateBootTimeout bounds a template's boot (default 5 minutes).
	TemplateBootTimeout time.Duration
	// TemplateGuestReady, when set, replaces the wait for a template's
	// guest to answer on SSH (tests: a fake hypervisor's guests answer
	// nothing).
	TemplateGuestReady func(ctx context.Context, addr string) error
	// Gate optionally refuses traffic to some addresses (tests).
	Gate netgate.Gate
	Log  *slog.Logger
}

func (c *Config) setDefaults() error {
	if c.Name == "" {
		return errors.New("node name must not be empty")
	}
	if c.DataDir == "" {
		return errors.New("data dir must not be empty")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	c.DataDir = abs
	if net.ParseIP(c.Bind) == nil {
		return fmt.Errorf("bind address %q is not an IP address", c.Bind)
	}
	if c.BootstrapExpect < 0 || c.BootstrapExpect > 1 {
		return errors.New("bootstrap-expect is 0 (join a cluster) or 1 (form one): a cluster forms on one peer and the others join it with a join token")
	}
	if c.Replicas < 0 || c.Replicas > MaxReplicas {
		return fmt.Errorf("raft-replicas is %d: 0 (every peer a Raft member) to %d", c.Replicas, MaxReplicas)
	}
	if c.Arch == "" {
		c.Arch = runtime.GOARCH
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.CPUOvercommit < 1 {
		c.CPUOvercommit = 1
	}
	if c.ReconcileInterval <= 0 {
		c.ReconcileInterval = time.Second
	}
	if c.ReapAfter <= 0 {
		c.ReapAfter = 72 * time.Hour
	}
	if c.NotReadyGrace <= 0 {
		c.NotReadyGrace = 10 * time.Second
	}
	if c.JoinTimeout <= 0 {
		c.JoinTimeout = 5 * time.Minute
	}
	if c.LeaderWait <= 0 {
		c.LeaderWait = 5 * time.Second
	}
	if c.VMInterval <= 0 {
		c.VMInterval = 5 * time.Second
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = 5 * time.Second
	}
	if c.BlobGCInterval <= 0 {
		c.BlobGCInterval = 10 * time.Minute
	}
	if c.BlobReleaseGrace <= 0 {
		c.BlobReleaseGrace = time.Minute
	}
	if c.BlobGCGrace <= 0 {
		c.BlobGCGrace = time.Hour
	}
	if c.MaxJobs <= 0 {
		c.MaxJobs = 4
	}
	if c.AuditEntries <= 0 {
		c.AuditEntries = 10_000
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// storeDir is where a peer with data dir dataDir keeps its image store.
func storeDir(dataDir string) string { return filepath.Join(dataDir, "images") }

// VMDir is where a peer with data dir dataDir keeps its VMs' overlay disks:
// the libvirt driver's Dir.
func VMDir(dataDir string) string { return filepath.Join(dataDir, "vms") }

// SharedDir is where a peer with data dir dataDir keeps the namespaces'
// shared folders (sharedstore).
func SharedDir(dataDir string) string { return filepath.Join(dataDir, "shared") }

// ImageDir is where a peer with data dir dataDir keeps the blobs its VMs
// start from: the libvirt driver's ImageDir.
func ImageDir(dataDir string) string { return imagestore.BlobDir(storeDir(dataDir)) }
