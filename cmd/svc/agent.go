package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/hypervisor/libvirt"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
)

// agentFlags are the settings of svc agent; a config file may set any of them.
type agentFlags struct {
	config             string
	name               string
	dataDir            string
	bind               string
	apiPort            int
	tlsPort            int
	raftPort           int
	gossipPort         int
	bootstrapExpect    int
	join               []string
	joinToken          string
	restore            string
	recover            bool
	cpu                int
	memory             string
	gpu                int
	dev                bool
	reapAfter          time.Duration
	raftReplicas       int
	libvirtSocket      string
	domainType         string
	qemuUser           string
	logLevel           string
	logFormat          string
	maxConns           int
	maxConnsClient     int
	chunkMiB           int
	maxJobs            int
	maxUploadStreams   int
	templates          int
	templatesMaxBytes  string
	hotMaxMemory       string
	namespaceAlias     string
	auditEntries       int
	diskFloor          string
	registryAllow      []string
	hypervisor         string
	vzGuestVNCPassword string
	cpuOvercommit      float64
}

// devCPUOvercommit is --dev's default --cpu-overcommit.
const devCPUOvercommit = 4

// Default ports.
const (
	defaultAPIPort    = 8080
	defaultTLSPort    = 8443
	defaultRaftPort   = 7000
	defaultGossipPort = 7946
)

func newAgentCmd() *cobra.Command { return (&agentFlags{}).command() }

// command builds svc agent with its flags bound to a.
func (a *agentFlags) command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run an svc peer on this host",
		Long: `Run an svc peer on this host. Every host of a cluster runs one; the peers elect a
Raft leader among themselves and any of them serves the API.

Settings come from flags, or from a JSON config file (--config) whose keys are
the flag names, e.g. {"name": "host-a", "join": ["10.0.0.11:7946"]}; flags win.`,
		Example: `  # try it out: a single-peer cluster on loopback
  svc agent --dev

  # the first host of a new cluster: it makes the cluster's CA and keys
  svc agent --bind 10.0.0.11 --data-dir /var/lib/svc --bootstrap-expect 1

  # every further host joins with a token an admin made
  # (svc cluster join-token create --uses 2)
  svc agent --bind 10.0.0.12 --data-dir /var/lib/svc --join 10.0.0.11:7946 --join-token svcjt1....

  # a peer restarted with its data dir needs no token
  svc agent --bind 10.0.0.12 --data-dir /var/lib/svc

  # every host lost: a new cluster from a snapshot (svc cluster snapshot save)
  svc agent --bind 10.0.0.21 --data-dir /var/lib/svc --bootstrap-expect 1 --restore cluster.snap

  # the majority lost for good: the survivor becomes a cluster of one
  svc agent --bind 10.0.0.11 --data-dir /var/lib/svc --recover`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd.Flags(), a.config); err != nil {
				return err
			}
			return a.run(cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.config, "config", "", "JSON config file whose keys are flag names")
	f.StringVar(&a.name, "name", "", "node name, kept across restarts (default: host name)")
	f.StringVar(&a.dataDir, "data-dir", "", "where Raft state and images live (default /var/lib/svc; .svc-dev with --dev)")
	f.StringVar(&a.bind, "bind", "", "address Raft, gossip and the API listen on and advertise (default: the host's first private IPv4; 127.0.0.1 with --dev)")
	f.IntVar(&a.apiPort, "api-port", defaultAPIPort, "API port (HTTP)")
	f.IntVar(&a.tlsPort, "tls-port", defaultTLSPort, "API port over HTTPS, once a certificate is uploaded")
	f.IntVar(&a.raftPort, "raft-port", defaultRaftPort, "Raft port")
	f.IntVar(&a.gossipPort, "gossip-port", defaultGossipPort, "gossip port (TCP and UDP)")
	f.IntVar(&a.bootstrapExpect, "bootstrap-expect", 0, "1: form a new cluster on this host (its CA and keys; 1 with --dev); 0: join one with --join-token")
	f.StringSliceVar(&a.join, "join", nil, "gossip addresses host:port of running peers, retried until one answers")
	f.StringVar(&a.joinToken, "join-token", "", "the token that admits this host to a cluster (svc cluster join-token create); a peer restarted with its data dir needs none (default $SVC_JOIN_TOKEN)")
	f.StringVar(&a.restore, "restore", "", "with --bootstrap-expect 1 on a host that is not a peer yet: form the cluster from this snapshot file (svc cluster snapshot save): its records, CA and keys; old tokens keep working, old peers rejoin with join tokens")
	f.BoolVar(&a.recover, "recover", false, "the majority of this peer's cluster is lost for good: once no leader answers it for a few seconds, make this peer the one voter of its cluster, keeping every entry of its log (docs/operations.md); refused while a leader answers")
	f.IntVar(&a.cpu, "cpu", 0, "CPUs offered to VMs (default: the host's minus 1)")
	f.Float64Var(&a.cpuOvercommit, "cpu-overcommit", 1, "vCPUs offered per CPU (1 to 64; default 4 with --dev, so that a small machine runs the default 3-CPU VM)")
	f.StringVar(&a.memory, "memory", "", "memory offered to VMs, e.g. 16G; a bare number is GiB (default: the host's minus 10% or 1 GiB)")
	f.IntVar(&a.gpu, "gpu", -1, "GPUs offered to VMs (default: the host's non-boot display controllers)")
	f.BoolVar(&a.dev, "dev", false, "a single-peer cluster on loopback in a local data dir, for trying svc out")
	f.DurationVar(&a.reapAfter, "reap-after", 72*time.Hour, "how long a dead peer keeps its Raft seat before a non-voter takes it")
	f.IntVar(&a.raftReplicas, "raft-replicas", 0, "bound the Raft group to its voters and this many non-voting replicas; every other peer follows the log through a member (give every peer the same; 0: every peer is a Raft member)")
	f.StringVar(&a.libvirtSocket, "libvirt-socket", libvirt.DefaultSocket, "libvirtd's unix socket")
	f.StringVar(&a.hypervisor, "hypervisor", defaultHypervisor(), "libvirt (Linux), vz (macOS: Apple's Virtualization framework), or fake: VMs that only exist in the agent's memory, for tests of the cluster (chaos runs)")
	f.StringVar(&a.vzGuestVNCPassword, "vz-guest-vnc-password", "admin", "with --hypervisor vz: the password the guests' Screen Sharing asks for (the images' own; the VM's VNC port asks clients for the VM's password)")
	f.StringVar(&a.domainType, "domain-type", "auto", "libvirt domain type: kvm (hardware virtualisation), qemu (software emulation) or auto (probe the host)")
	f.StringVar(&a.qemuUser, "qemu-user", "", "unprivileged user QEMU runs as, never root (default: libvirt-qemu, or qemu where the host has no libvirt-qemu)")
	f.IntVar(&a.maxConns, "max-conns", 0, "open API connections of clients other than the cluster's peers (default: 3/4 of the file limit, at most 16384)")
	f.IntVar(&a.maxConnsClient, "max-conns-per-client", 512, "open API connections of one client address")
	f.IntVar(&a.chunkMiB, "chunk-mib", 64, "size in MiB of the chunks a disk is cut into when pushed to a registry (1 to 512)")
	f.StringSliceVar(&a.registryAllow, "registry-allow", nil, "registries peers may contact beyond public addresses: CIDRs, addresses, host names (default: none; with --dev, loopback and private ranges)")
	f.IntVar(&a.maxJobs, "max-jobs", 4, "registry jobs (pushes, pulls) this peer runs at once; the others wait their turn (1 to 64)")
	f.IntVar(&a.maxUploadStreams, "max-upload-streams", 4, "image chunks this peer serves to other peers at once; more are sent elsewhere (1 to 64)")
	f.IntVar(&a.auditEntries, "audit-entries", 10000, fmt.Sprintf("API writes the cluster's audit log keeps, the oldest dropped (%d to %d; the leader's value is the one applied)", raftfsm.MinAuditKeep, raftfsm.MaxAuditKeep))
	f.IntVar(&a.templates, "templates", 4, "booted templates this node keeps for warm VM configs, whose VMs then start without a boot (0 to 32; 0: none)")
	f.StringVar(&a.templatesMaxBytes, "templates-max-bytes", "16G", "disk the booted templates may take (memory files and disks), e.g. 16G")
	f.StringVar(&a.hotMaxMemory, "hot-max-memory", "auto", "memory this node's hot guests (the hot pools of warm VM configs) may take together, e.g. 4G; auto: an eighth of the node's memory; 0: no hot guests")
	f.StringVar(&a.namespaceAlias, "namespace-alias", "orka-default", "another name of the default namespace (svc-default) in every API path, for clients that hard-code Orka's default namespace (the Jenkins and TeamCity plugins, Packer); set the same on every peer; \"\": none")
	f.StringVar(&a.diskFloor, "disk-floor", "1G", "free space of the data dir's disk that no work may take (Raft's log and snapshots, the peer's logs): uploads, pulls, VM disks, resizes, shared folders, templates and saves that would take the disk below it are refused")
	f.StringVar(&a.logLevel, "log-level", "info", "debug, info, warn or error")
	f.StringVar(&a.logFormat, "log-format", "text", "text or json")
	return cmd
}

// applyConfigFile sets every flag the user did not give from the JSON file.
func applyConfigFile(fs *pflag.FlagSet, path string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var settings map[string]any
	if err := json.Unmarshal(b, &settings); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	for key, v := range settings {
		fl := fs.Lookup(key)
		if fl == nil || key == "config" {
			return fmt.Errorf("config file %s: unknown setting %q", path, key)
		}
		if fl.Changed {
			continue
		}
		var s string
		switch x := v.(type) {
		case string:
			s = x
		case []any:
			parts := make([]string, 0, len(x))
			for _, p := range x {
				parts = append(parts, fmt.Sprint(p))
			}
			s = strings.Join(parts, ",")
		default:
			s = fmt.Sprint(x)
		}
		if err := fs.Set(key, s); err != nil {
			return fmt.Errorf("config file %s: %s: %w", path, key, err)
		}
	}
	return nil
}

func (a *agentFlags) run(cmd *cobra.Command) error {
	log, err := newLogger(a.logLevel, a.logFormat)
	if err != nil {
		return err
	}
	cfg, err := a.peerConfig(cmd.Flags())
	if err != nil {
		return err
	}
	cfg.Log = log
	log.Info("hypervisor", "driver", cfg.Driver.Describe(), "abilities", fmt.Sprintf("%+v", hypervisor.AbilitiesOf(cfg.Driver)))
	p, err := peer.Start(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "svc agent %s: API http://%s  https %s  raft %s  gossip %s  data %s\n",
		cfg.Name, p.APIAddr(), p.TLSAddr(), p.RaftAddr(), p.GossipAddr(), cfg.DataDir)
	select {
	case <-cmd.Context().Done():
		log.Info("stopping")
	case err = <-p.Err():
	}
	if cerr := p.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// devRegistryAllow is what a --dev peer may contact besides public
// registries: loopback and the private ranges.
func devRegistryAllow() []string {
	return []string{"127.0.0.0/8", "::1/128", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7"}
}

func (a *agentFlags) peerConfig(fs *pflag.FlagSet) (peer.Config, error) {
	cfg := peer.Config{
		Name: a.name, DataDir: a.dataDir, Bind: a.bind,
		APIPort: a.apiPort, TLSPort: a.tlsPort, RaftPort: a.raftPort, GossipPort: a.gossipPort,
		BootstrapExpect: a.bootstrapExpect, Join: a.join, JoinToken: a.joinToken, Restore: a.restore, Recover: a.recover, Version: version, ReapAfter: a.reapAfter, Replicas: a.raftReplicas,
		APILimits: httpapi.Limits{MaxConns: a.maxConns, MaxConnsPerClient: a.maxConnsClient},
		ChunkMiB:  a.chunkMiB,
		MaxJobs:   a.maxJobs, MaxUploadStreams: a.maxUploadStreams, RegistryAllow: a.registryAllow,
	}
	if cfg.JoinToken == "" {
		cfg.JoinToken = os.Getenv("SVC_JOIN_TOKEN")
	}
	if a.bootstrapExpect < 0 || a.bootstrapExpect > 1 {
		return cfg, errors.New("--bootstrap-expect is 1 (form a cluster on this host) or 0: a cluster forms on one peer and every other host joins it with --join and --join-token")
	}
	if a.bootstrapExpect == 1 && cfg.JoinToken != "" {
		return cfg, errors.New("give --bootstrap-expect 1 (form a cluster) or --join-token (join one), not both")
	}
	if a.restore != "" && a.bootstrapExpect != 1 && !a.dev {
		return cfg, errors.New("--restore forms a new cluster from the snapshot: give it with --bootstrap-expect 1 (to restore into a running cluster, use 'svc cluster snapshot restore')")
	}
	if a.recover && (a.restore != "" || cfg.JoinToken != "" || a.bootstrapExpect == 1) {
		return cfg, errors.New("--recover restarts a peer on its own data dir: give it alone, without --restore, --join-token or --bootstrap-expect")
	}
	if cfg.JoinToken != "" && len(cfg.Join) == 0 {
		return cfg, errors.New("--join-token needs --join: the gossip address of a peer of the cluster")
	}
	if a.chunkMiB < 1 || a.chunkMiB > 512 {
		return cfg, errors.New("--chunk-mib must be between 1 and 512")
	}
	if a.maxUploadStreams < 1 || a.maxUploadStreams > 64 {
		return cfg, errors.New("--max-upload-streams must be between 1 and 64")
	}
	if a.maxJobs < 1 || a.maxJobs > 64 {
		return cfg, errors.New("--max-jobs must be between 1 and 64")
	}
	if a.templates < 0 || a.templates > raftfsm.MaxTemplatesPerNode {
		return cfg, fmt.Errorf("--templates must be between 0 and %d", raftfsm.MaxTemplatesPerNode)
	}
	cfg.Templates = a.templates
	if a.auditEntries < raftfsm.MinAuditKeep || a.auditEntries > raftfsm.MaxAuditKeep {
		return cfg, fmt.Errorf("--audit-entries must be between %d and %d", raftfsm.MinAuditKeep, raftfsm.MaxAuditKeep)
	}
	cfg.AuditEntries = a.auditEntries
	if b, err := api.ParseSize(a.templatesMaxBytes); err != nil || b <= 0 {
		return cfg, fmt.Errorf("--templates-max-bytes %q: a size such as 16G", a.templatesMaxBytes)
	} else {
		cfg.TemplatesMaxBytes = b
	}
	switch b, err := api.ParseSize(a.hotMaxMemory); {
	case a.hotMaxMemory == "auto":
	case err != nil || b < 0:
		return cfg, fmt.Errorf("--hot-max-memory %q: auto, 0 or a size such as 4G", a.hotMaxMemory)
	case b == 0:
		cfg.HotMaxMemory = -1
	default:
		cfg.HotMaxMemory = b
	}
	if err := httpapi.ValidNamespaceAlias(a.namespaceAlias); err != nil {
		return cfg, fmt.Errorf("--namespace-alias: %w", err)
	}
	cfg.NamespaceAlias = a.namespaceAlias
	if b, err := api.ParseSize(a.diskFloor); err != nil || b < 64<<20 {
		return cfg, fmt.Errorf("--disk-floor %q: a size of 64M or more, such as 1G", a.diskFloor)
	} else {
		cfg.DiskFloor = b
	}
	if a.maxConns < 0 || a.maxConnsClient < 0 {
		return cfg, errors.New("--max-conns and --max-conns-per-client must not be negative")
	}
	if a.dev {
		if cfg.DataDir == "" {
			cfg.DataDir = ".svc-dev"
		}
		if cfg.Bind == "" {
			cfg.Bind = "127.0.0.1"
		}
		if !fs.Changed("bootstrap-expect") && cfg.JoinToken == "" {
			cfg.BootstrapExpect = 1
		}
		if !fs.Changed("cpu-overcommit") {
			a.cpuOvercommit = devCPUOvercommit
		}
		if !fs.Changed("registry-allow") {
			// A dev peer tries registries on the machine and the local network.
			cfg.RegistryAllow = devRegistryAllow()
		}
		cfg.Local = true
	}
	if _, err := ocidisk.ParseEgress(cfg.RegistryAllow); err != nil {
		return cfg, fmt.Errorf("--registry-allow: %w", err)
	}
	if cfg.Name == "" {
		h, err := os.Hostname()
		if err != nil {
			return cfg, fmt.Errorf("--name not given and no host name: %w", err)
		}
		cfg.Name = strings.ToLower(strings.Split(h, ".")[0])
	}
	if err := api.ValidateName("--name", cfg.Name, api.MaxNameLen); err != nil {
		return cfg, err
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "/var/lib/svc"
	}
	// Disk paths go to libvirtd and into qcow2 backing files: they must be absolute.
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return cfg, fmt.Errorf("--data-dir: %w", err)
	}
	cfg.DataDir = dataDir
	if cfg.Bind == "" {
		ip, err := privateIPv4()
		if err != nil {
			return cfg, err
		}
		cfg.Bind = ip
	}
	if net.ParseIP(cfg.Bind) == nil {
		return cfg, fmt.Errorf("--bind %q is not an IP address", cfg.Bind)
	}
	for _, j := range cfg.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			return cfg, fmt.Errorf("--join %q must be host:port: %w", j, err)
		}
	}
	capacity, err := hostCapacity(a)
	if err != nil {
		return cfg, err
	}
	if a.cpuOvercommit < 1 || a.cpuOvercommit > 64 {
		return cfg, fmt.Errorf("--cpu-overcommit %g: give 1 to 64 vCPUs per CPU", a.cpuOvercommit)
	}
	cfg.Capacity, cfg.CPUOvercommit = capacity, a.cpuOvercommit
	cfg.Hypervisor = a.hypervisor
	switch a.hypervisor {
	case "fake":
		cfg.Driver = fake.New(hypervisor.DomainPrefix(cfg.Name))
		return cfg, nil
	case "vz":
		drv, err := newVZDriver(cfg, a.vzGuestVNCPassword)
		if err != nil {
			return cfg, err
		}
		cfg.Driver = drv
		return cfg, nil
	case "libvirt":
	default:
		return cfg, fmt.Errorf("--hypervisor %q: use libvirt, vz or fake", a.hypervisor)
	}
	dt := a.domainType
	if dt == "auto" {
		dt = ""
	}
	drv, err := libvirt.New(libvirt.Config{
		Socket: a.libvirtSocket, DomainType: dt, Dir: peer.VMDir(cfg.DataDir), ImageDir: peer.ImageDir(cfg.DataDir),
		QEMUUser: a.qemuUser, Prefix: hypervisor.DomainPrefix(cfg.Name),
	})
	if err != nil {
		return cfg, fmt.Errorf("libvirt driver (--domain-type, --qemu-user): %w", err)
	}
	cfg.Driver = drv
	return cfg, nil
}

// hostCapacity reads the host and applies --cpu, --memory and --gpu.
func hostCapacity(a *agentFlags) (raftfsm.Capacity, error) {
	c, err := peer.HostCapacity()
	if err != nil {
		return c, err
	}
	if a.cpu < 0 {
		return c, errors.New("--cpu must not be negative")
	}
	if a.cpu > 0 {
		c.CPU = a.cpu
	}
	if a.memory != "" {
		m := a.memory
		if _, err := strconv.ParseFloat(m, 64); err == nil {
			m += "G" // a bare number is GiB
		}
		b, err := api.ParseSize(m)
		if err != nil {
			return c, fmt.Errorf("--memory: %w", err)
		}
		c.MemoryBytes = b
	}
	if a.gpu >= 0 {
		c.GPU = a.gpu
	}
	return c, nil
}

// privateIPv4 returns the first private IPv4 address of an interface that is up.
func privateIPv4() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("list addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip4 := ipn.IP.To4(); ip4 != nil && ip4.IsPrivate() {
				return ip4.String(), nil
			}
		}
	}
	return "", errors.New("no private IPv4 address found: pass --bind")
}

func newLogger(level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}
