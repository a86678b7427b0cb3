package peer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/httpapi"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/node/audit"
	"github.com/svc-project/svc/node/blobgc"
	"github.com/svc-project/svc/node/blobsource"
	"github.com/svc-project/svc/node/catchup"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/node/follow"
	"github.com/svc-project/svc/node/health"
	"github.com/svc-project/svc/node/host"
	"github.com/svc-project/svc/node/hostadmin"
	"github.com/svc-project/svc/node/hotpool"
	"github.com/svc-project/svc/node/jobs"
	"github.com/svc-project/svc/node/leader"
	"github.com/svc-project/svc/node/membership"
	"github.com/svc-project/svc/node/peerbook"
	"github.com/svc-project/svc/node/peerlink"
	"github.com/svc-project/svc/node/propagate"
	"github.com/svc-project/svc/node/runnerpool"
	"github.com/svc-project/svc/node/sharedstore"
	"github.com/svc-project/svc/node/signin"
	"github.com/svc-project/svc/node/snapshots"
	"github.com/svc-project/svc/node/standing"
	"github.com/svc-project/svc/node/swarm"
	"github.com/svc-project/svc/node/templates"
	"github.com/svc-project/svc/node/term"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// Peer is one running svc agent.
type Peer struct {
	// leaderLink holds the Raft store, the gossip layer, the links to
	// the other peers and the client over the fabric (leaderlink.go).
	leaderLink
	// follows runs the peer's Follower while it is outside a bounded
	// Raft group (follow.go).
	follows follower
	cfg     Config
	api     *httpapi.Server
	// pools runs the runner pools while this peer leads.
	pools  *runnerpool.Controller
	apiL   net.Listener
	tlsL   net.Listener
	raftL  net.Listener
	reg    *prometheus.Registry
	images *imagestore.Store
	driver hypervisor.Driver
	// id is this peer's identity in the cluster's fabric, trust who it
	// talks to; member keeps both in step with the state (package
	// membership).
	id     *fabric.Identity
	trust  *fabric.Trust
	member *membership.Membership
	// joinL receives the TLS streams of the gossip port: the join service.
	joinL *connListener
	// host is the VM host agent (package host), jobs the registry jobs
	// (package jobs).
	host *host.Host
	// audit carries the API writes this peer receives to the audit log.
	audit *audit.Recorder
	// templates keeps the node's booted templates (nil: none).
	templates *templates.Manager
	hot       *hotpool.Pool
	// shared keeps the namespaces' shared folders (nil when this node
	// offers no shared storage: sharedWhy says why).
	shared *sharedstore.Keeper
	// disk is the budget of the data dir's disk (diskbudget).
	disk      *diskbudget.Budget
	sharedWhy string
	jobs      *jobs.Manager
	leader    *leader.Leader
	// egress is the registries this peer may contact (RegistryAllow).
	egress *ocidisk.Egress
	// propagate waits for a write to reach every live peer's replica.
	propagate *propagate.Waiter
	// swarm fetches and serves image chunks, peer to peer.
	swarm *swarm.Service
	// blobs gets the image blobs this node's VMs start from.
	blobs     *blobsource.Source
	caught    *catchup.Tracker // whether the replica has caught up since the start
	hostAdmin *hostadmin.Users
	metrics   *peerMetrics
	// book keeps the gossip addresses through which this peer finds the
	// cluster.
	book *peerbook.Book
	// health says whether this node takes VMs and gossips its report;
	// standing asks the cluster whether this peer still belongs to it.
	health   *health.Monitor
	standing *standing.Keeper

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// terms runs the leader's work while this peer leads.
	terms *term.Terms

	mu    sync.Mutex
	errCh chan error
	halt  bool // Halt: stop without hand-over or snapshot
}

// Start opens the peer's state, starts Raft, gossip and the API, and begins
// joining or bootstrapping the cluster in the background. A host that is
// not a peer yet forms a cluster (BootstrapExpect 1) or joins one with a
// join token first; without either it does not start.
func Start(cfg Config) (*Peer, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	// Searchable by others, not listable: QEMU's user goes through it to
	// the VMs' disks (see VMDir and ImageDir).
	if err := os.MkdirAll(cfg.DataDir, 0o711); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	if err := os.Chmod(cfg.DataDir, 0o711); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	cfg.Log = cfg.Log.With("peer", cfg.Name)
	egress, err := ocidisk.ParseEgress(cfg.RegistryAllow)
	if err != nil {
		return nil, err
	}
	p := &Peer{cfg: cfg, reg: prometheus.NewRegistry(), driver: cfg.Driver, egress: &egress}
	p.leaderLink.cfg = &p.cfg
	p.ctx, p.cancel = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			p.closeParts()
		}
	}()

	listen := func(what string, port int) (net.Listener, error) {
		l, err := net.Listen("tcp", net.JoinHostPort(cfg.Bind, strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("%s listen: %w", what, err)
		}
		return l, nil
	}
	if p.apiL, err = listen("API", cfg.APIPort); err != nil {
		return nil, err
	}
	if p.tlsL, err = listen("HTTPS", cfg.TLSPort); err != nil {
		return nil, err
	}
	if p.raftL, err = listen("raft", cfg.RaftPort); err != nil {
		return nil, err
	}
	restarted, seeds, err := p.openIdentity()
	if err != nil {
		return nil, err
	}
	p.book = peerbook.New(peerbook.Config{Name: cfg.Name, DataDir: cfg.DataDir, Join: cfg.Join, Seeds: seeds, Timeout: cfg.JoinTimeout, Log: cfg.Log})
	// The replica, made before the store that feeds it so that the links
	// can read peers' addresses from it.
	fsm := raftfsm.NewFSM(cfg.Log.With("part", "fsm"))
	p.links = peerlink.New(peerlink.Config{
		Name: cfg.Name, TLSAddr: p.TLSAddr(), APIAddr: p.APIAddr(), Version: cfg.Version, Plain: cfg.PlainPeers, Gate: cfg.Gate,
		Identity: p.id, Trust: p.trust, State: fsm,
		Member: func(name string) (gossip.Member, bool) {
			if p.gossip == nil {
				return gossip.Member{}, false
			}
			return p.gossip.Member(name)
		},
		NotMember: func() { p.standing.RefreshTrustSoon() },
	})
	p.peerHTTP = &http.Client{Transport: p.links.PeerTransport()}
	p.follows.p = p
	p.followed = p.follows.leader
	p.propagate = propagate.New(propagate.Config{
		Self: cfg.Name, HTTP: p.peerHTTP, URL: p.links.URL,
		Members: func() []gossip.Member {
			if p.gossip == nil {
				return nil
			}
			return p.gossip.Members()
		},
		InCluster: func(name string) bool { _, ok := fsm.PeerIdentity(name); return ok },
	})
	p.standing = standing.New(standing.Config{
		Name: cfg.Name, Addrs: func() []string {
			var members []gossip.Member // none before gossip runs
			if p.gossip != nil {
				members = p.gossip.Members()
			}
			return p.book.Addrs(members)
		},
		Ask:         func(ctx context.Context, addr string) error { return p.id.Standing(ctx, p.links.Dial(), addr) },
		LeaderKnown: func() bool { name, _ := p.LeaderAPI(); return name != "" },
		Removed:     p.fail, Trust: p.trust, PeerURL: p.links.URL, HTTP: p.peerHTTP, Log: cfg.Log.With("part", "standing"),
	})
	if restarted {
		if err := p.standing.Check(p.ctx); err != nil {
			return nil, err
		}
	}
	p.images, err = imagestore.Open(storeDir(cfg.DataDir))
	if err != nil {
		return nil, err
	}
	// A restore's upload left by a peer stopped mid-way is never whole.
	if err := os.RemoveAll(snapshots.UploadDir(cfg.DataDir)); err != nil {
		return nil, err
	}
	p.disk = diskbudget.New(diskbudget.Config{Dir: cfg.DataDir, Floor: cfg.DiskFloor, Name: cfg.Name, Log: cfg.Log.With("part", "disk"), Registry: p.reg})
	raftL := p.raftL
	p.raftL = nil // the store owns it now
	p.store, err = raftstore.OpenStore(raftstore.StoreConfig{
		ID: cfg.Name, DataDir: cfg.DataDir, Listener: raftL, Advertise: raftL.Addr().String(), TLS: p.links.RaftTLS(),
		Gate: cfg.Gate, Timing: cfg.RaftTiming, Recover: cfg.Recover, RecoverProbe: cfg.RecoverProbe, Log: cfg.Log.With("part", "raft"),
	}, fsm)
	if err != nil {
		return nil, err
	}
	p.caught = catchup.New(catchup.Config{Replica: p.FSM(), LeaderIndex: p.leaderAppliedIndex, Log: cfg.Log.With("part", "catchup")})
	// The first report others see is true: a report corrected right after
	// the join has to travel by gossip, which can take a push/pull round.
	p.health = health.New(health.Config{
		Driver: p.driver, Targets: p.guestTargets, Interval: cfg.HealthInterval, Log: cfg.Log.With("part", "health"),
		Announce: func() error { return p.gossip.SetReport(p.report()) },
	})
	p.health.Check(p.ctx)
	p.joinL = newConnListener(&net.TCPAddr{IP: net.ParseIP(cfg.Bind)})
	gcfg := gossip.Config{
		Name: cfg.Name, Bind: cfg.Bind, Port: cfg.GossipPort, Local: cfg.Local, Gate: cfg.Gate,
		Label: "svc/" + p.id.ClusterID, Divert: p.joinL.put,
		Report: p.report(), Log: cfg.Log.With("part", "gossip"),
	}
	if !cfg.PlainPeers {
		keys, err := fabric.LoadGossipKeys(p.id.Dir)
		if err != nil {
			return nil, err
		}
		gcfg.Keys = &gossip.Keys{Keys: keys.Keys, Primary: keys.Primary}
	}
	p.gossip, err = gossip.New(gcfg)
	if err != nil {
		return nil, err
	}
	var pool membership.Pool
	if !cfg.PlainPeers {
		pool = p.gossip
	}
	p.member = membership.New(membership.Config{
		Host: p.netHost(), Identity: p.id, Trust: p.trust, FSM: p.FSM(), Proposer: p, Pool: pool,
		KeysInstalled: func(uint64) { p.health.AnnounceSoon() }, Sync: p.caught.SyncReplica, Dial: p.links.Dial(),
		Approved: p.health.AnnounceSoon, Log: cfg.Log.With("part", "membership"),
	})
	p.hostAdmin = hostadmin.New(hostadmin.Config{
		DataDir: cfg.DataDir, FSM: p.FSM(), SigningKey: p.member.SigningKey, Apply: p.applyHostUser,
		WaitPeersApplied: p.propagate.WaitPeersApplied, Log: cfg.Log.With("part", "hostadmin"),
	})
	p.reg.MustRegister(p.store, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	p.metrics = newPeerMetrics(p)
	p.swarm = swarm.New(swarm.Config{
		Context: p.ctx, Name: cfg.Name, Store: p.images, HTTP: p.peerHTTP, PeerURL: p.links.URL, MaxUploads: cfg.MaxUploadStreams,
		Leader: func(ctx context.Context) (string, string, error) {
			name, addr, err := p.WaitLeader(ctx)
			return name, p.links.PeerScheme() + "://" + addr, err
		},
		Readable:      p.FSM().NamespaceHolds,
		CorruptServed: cfg.CorruptServedChunks, Registry: p.reg, Log: cfg.Log.With("part", "swarm"),
	})
	p.blobs = blobsource.New(blobsource.Config{
		Name: cfg.Name, FSM: p.FSM(), Images: p.images, Swarm: p.swarm, HTTP: p.peerHTTP, PeerURL: p.links.URL,
		Pull: func(ctx context.Context, vm raftfsm.VM, digest string) error {
			return p.jobs.PullVMImage(ctx, vm, digest)
		},
		Disk: p.disk, Proposer: p, Log: cfg.Log.With("part", "blobs"),
	})
	hc := host.Config{
		Name: cfg.Name, Bind: cfg.Bind, Graceful: func() bool { return !p.halt }, FSM: p.FSM(), Driver: p.driver, Images: p.images,
		Proposer: p, Blobs: p.blobs, Ready: p.caught, Healthy: p.health.OK, Interval: cfg.VMInterval,
		Disk: p.disk, Registerer: p.reg, Log: cfg.Log.With("part", "host"),
	}
	if p.driver != nil {
		p.templates = templates.New(templates.Config{
			Name: cfg.Name, FSM: p.FSM(), Driver: p.driver, Images: p.images, Dir: filepath.Join(cfg.DataDir, "templates"),
			Proposer: p, Ready: p.caught, Healthy: p.health.OK, Max: cfg.Templates, MaxBytes: cfg.TemplatesMaxBytes, Disk: p.disk,
			BootTimeout: cfg.TemplateBootTimeout, GuestReady: cfg.TemplateGuestReady, Registerer: p.reg, Log: cfg.Log.With("part", "templates"),
		})
		hc.Templates = p.templates
		p.hot = hotpool.New(hotpool.Config{
			Name: cfg.Name, Bind: cfg.Bind, FSM: p.FSM(), Driver: p.driver, Images: p.images, Templates: p.templates,
			Proposer: p, Ready: p.caught, Healthy: p.health.OK, MaxMemory: cfg.HotMaxMemory, Registerer: p.reg, Log: cfg.Log.With("part", "hotpool"),
			Disk: p.disk, FillTimeout: cfg.HotFillTimeout,
		})
		hc.Hot = p.hot
	}
	if store, err := sharedstore.Open(p.ctx, p.driver, SharedDir(cfg.DataDir), p.disk, cfg.Log.With("part", "shared")); err != nil {
		p.sharedWhy = err.Error()
		cfg.Log.Info("this node offers no shared storage", "why", err)
	} else {
		hc.Shared = store
		p.shared = sharedstore.NewKeeper(sharedstore.KeeperConfig{Name: cfg.Name, Store: store, FSM: p.FSM(), Proposer: p,
			RoomChanged: p.health.AnnounceSoon, Log: cfg.Log.With("part", "shared")})
	}
	p.host = host.New(hc)
	disks, _ := p.driver.(hypervisor.Disks)
	p.jobs = jobs.New(jobs.Config{
		Name: cfg.Name, Arch: cfg.Arch, ChunkMiB: cfg.ChunkMiB, MaxJobs: cfg.MaxJobs, Interval: cfg.ReconcileInterval,
		FSM: p.FSM(), Keys: p.member, Images: p.images, Disks: disks, Proposer: p, Blobs: p.blobs, Swarm: p.swarm, Ready: p.caught, Egress: p.egress, Gate: cfg.Gate, Disk: p.disk,
		Registerer: p.reg, Log: cfg.Log.With("part", "jobs"),
	})
	p.leader = leader.New(leader.Config{
		Name: cfg.Name, FSM: p.FSM(), Raft: p.store, Pool: p.gossip, Jobs: p.jobs, OnInit: func() {
			if err := p.hostAdmin.WriteBootstrapToken(p.ctx); err != nil {
				cfg.Log.Error("cannot write the admin token", "err", err)
			}
		},
		Init:      func() (raftfsm.Init, bool) { return membership.PendingInit(p.id.Dir) },
		Restoring: func() bool { return snapshots.PendingRestore(p.id.Dir) },
		Remove:    func(ctx context.Context, name, by string) error { return p.member.RemoveNode(ctx, name, by) },
		Interval:  cfg.ReconcileInterval, ReapAfter: cfg.ReapAfter, NotReadyGrace: cfg.NotReadyGrace,
		Replicas: cfg.Replicas, ReplaceAfter: cfg.ReplaceAfter,
		Log: cfg.Log.With("part", "leader"),
	})
	p.terms = term.New(term.Config{
		Raft: p.store, Retry: cfg.ReconcileInterval, Log: cfg.Log.With("part", "leader"),
		Ready: func() { p.caught.Mark("leads and applied its term's barrier") },
		Work: func(ctx context.Context, since time.Time) {
			pools := make(chan struct{})
			go func() {
				defer close(pools)
				p.pools.Run(ctx)
			}()
			p.leader.Run(ctx, since)
			<-pools
		},
	})
	p.audit = audit.New(p, cfg.AuditEntries, cfg.Log.With("part", "audit"), p.reg)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = p.egress.Dialer()
	p.pools = runnerpool.New(runnerpool.Config{
		FSM: p.FSM(), Apply: p.store.ApplyCommand, Keys: p.member, Transport: tr, PollInterval: cfg.RunnerPollInterval,
		APIURL: func() string { return "http://" + p.APIAddr() }, Log: cfg.Log.With("part", "runnerpool"), Metrics: runnerpool.NewMetrics(p.reg),
	})
	var shared httpapi.SharedFolders // a nil *Keeper is no interface's nil
	if p.shared != nil {
		shared = p.shared
	}
	p.api = httpapi.New(httpapi.Config{
		Replica: p, Consensus: APIConsensus(p), Propagation: p.propagate, Readiness: p.caught, Peers: p, Links: p.links, Keys: p.member, Membership: p.member, Placer: p.leader, Jobs: p.jobs, Registries: p.jobs,
		Guests: p.host, Shared: shared, Images: p.images, Audit: p.audit, Disk: p.disk, Pending: p.member.Pending,
		RunnerPools: p.pools, Swarm: p.swarm,
		Feed: &follow.Feed{Log: p.store, FSM: p.FSM(), Member: func() bool { return p.follows.gossiped() != "" }, Leader: func() string { _, id := p.store.Leader(); return id }, LeaderChanged: p.store.LeaderChanged},
		Snapshots: snapshots.New(snapshots.Config{
			Name: cfg.Name, Version: cfg.Version, Store: p.store, FSM: p.FSM(), Secret: p.id.Secret, ClusterID: p.id.ClusterID,
			Dir: snapshots.UploadDir(cfg.DataDir), Disk: p.disk, Log: cfg.Log.With("part", "snapshots"),
		}),
		SignIn: signin.New(signin.Config{State: p.FSM(), Keys: p.member, Egress: p.egress, Log: cfg.Log.With("part", "signin")}),
		Log:    cfg.Log.With("part", "api"), Registry: p.reg,
		LeaderWait: cfg.LeaderWait, Gate: cfg.Gate, Limits: cfg.APILimits, NamespaceAlias: cfg.NamespaceAlias, Version: cfg.Version,
	})
	p.wg.Go(func() {
		if err := p.api.Serve(p.ctx, p.apiL, nil); err != nil && !errors.Is(err, net.ErrClosed) {
			cfg.Log.Error("API stopped", "err", err)
		}
	})
	p.wg.Go(func() {
		if err := p.api.Serve(p.ctx, p.tlsL, p.links.HTTPSConfig()); err != nil && !errors.Is(err, net.ErrClosed) {
			cfg.Log.Error("HTTPS API stopped", "err", err)
		}
	})
	p.serveJoins()
	if err := p.hostAdmin.Serve(p.ctx, &p.wg); err != nil {
		return nil, err
	}
	p.wg.Go(func() {
		if err := p.member.Run(p.ctx); err != nil {
			cfg.Log.Error("stopping", "err", err)
			p.fail(err)
		}
	})
	p.wg.Go(func() { p.caught.Run(p.ctx) })
	p.wg.Go(func() { p.follows.run(p.ctx) })
	p.wg.Go(func() { p.health.RunAnnouncer(p.ctx) })
	p.wg.Go(func() { p.watchDiskRoom(p.ctx) })
	p.wg.Go(func() { p.standing.Run(p.ctx) })
	p.wg.Go(p.joinGossip)
	p.wg.Go(func() {
		if err := bootstrap(p.ctx, p.store, cfg.Name, p.id.Dir, cfg.Log); err != nil {
			cfg.Log.Error("bootstrap failed", "err", err)
			p.fail(err)
		}
	})
	p.wg.Go(func() { p.terms.Run(p.ctx) })
	p.wg.Go(func() { p.book.Remember(p.ctx, p.gossip) })
	p.wg.Go(func() { p.health.Run(p.ctx) })
	p.wg.Go(func() { p.host.Run(p.ctx) })
	if p.templates != nil {
		p.wg.Go(func() { p.templates.Run(p.ctx) })
		p.wg.Go(func() { p.hot.Run(p.ctx) })
	}
	if p.shared != nil {
		p.wg.Go(func() { p.shared.Run(p.ctx) })
	}
	p.wg.Go(func() {
		blobgc.New(blobgc.Config{
			Name: cfg.Name, FSM: p.FSM(), Images: p.images, Driver: p.driver, Proposer: p, Ready: p.caught,
			Interval: cfg.BlobGCInterval, Grace: cfg.BlobGCGrace, ReleaseGrace: cfg.BlobReleaseGrace, Log: cfg.Log.With("part", "blobgc"),
		}).Run(p.ctx)
	})
	p.wg.Go(func() { p.jobs.Run(p.ctx) })
	p.wg.Go(func() { p.audit.Run(p.ctx) })
	p.wg.Go(func() { p.api.RunWatches(p.ctx, filepath.Join(cfg.DataDir, "watch.json")) })
	p.wg.Go(func() {
		// Once the replica has caught up: a namespace of the alias's name,
		// made before the alias was, keeps the alias off (and says so).
		select {
		case <-p.ctx.Done():
		case <-p.caught.CaughtUpCh():
			if why := p.api.AliasTaken(); why != "" {
				cfg.Log.Error("the namespace alias is off", "alias", cfg.NamespaceAlias, "why", why)
			}
		}
	})
	ok = true
	cfg.Log.Info("peer started", "cluster", p.id.ClusterID, "api", p.APIAddr(), "https", p.TLSAddr(), "raft", p.store.Addr(), "gossip", p.gossip.Addr(),
		"had_state", p.store.HadState(), "cpu", cfg.Capacity.CPU, "memory", cfg.Capacity.MemoryBytes, "gpu", cfg.Capacity.GPU)
	return p, nil
}

// Close stops the peer without leaving the cluster: the others see it die
// and see it again when it restarts from the same data dir.
func (p *Peer) Close() error {
	// Leadership goes first, while this peer still serves and replicates:
	// the cluster then takes writes at once.
	if p.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := p.store.HandOver(ctx); err != nil {
			p.cfg.Log.Warn("hand leadership over", "err", err)
		}
		cancel()
	}
	p.cancel()
	p.wg.Wait()
	err := p.closeParts()
	p.health.Unguard()
	return err
}

// Halt stops the peer the way a crash would: no hand-over of leadership, no
// snapshot of its state; the others must elect and the restart replays.
func (p *Peer) Halt() error {
	p.halt = true
	p.cancel()
	p.wg.Wait()
	return p.closeParts()
}

func (p *Peer) closeParts() error {
	p.cancel()
	var errs []error
	if p.apiL != nil {
		_ = p.apiL.Close()
	}
	if p.tlsL != nil {
		_ = p.tlsL.Close()
	}
	if p.raftL != nil {
		_ = p.raftL.Close()
	}
	if p.joinL != nil {
		_ = p.joinL.Close()
	}
	if p.gossip != nil {
		errs = append(errs, p.gossip.Shutdown())
	}
	if p.store != nil {
		errs = append(errs, p.store.Close(!p.halt))
	}
	return errors.Join(errs...)
}

// Name returns the node name.
func (p *Peer) Name() string { return p.cfg.Name }

// APIAddr returns the API's host:port.
func (p *Peer) APIAddr() string { return p.apiL.Addr().String() }

// TLSAddr returns the HTTPS API's host:port.
func (p *Peer) TLSAddr() string { return p.tlsL.Addr().String() }

// GossipAddr returns the gossip host:port others join.
func (p *Peer) GossipAddr() string { return p.gossip.Addr() }

// RaftAddr returns the Raft transport's host:port.
func (p *Peer) RaftAddr() string { return p.store.Addr() }

// Membership returns this peer's part in who belongs to the cluster.
func (p *Peer) Membership() *membership.Membership { return p.member }

// Images returns this peer's blob store.
func (p *Peer) Images() *imagestore.Store { return p.images }

// Driver returns this peer's hypervisor driver.
func (p *Peer) Driver() hypervisor.Driver { return p.driver }

// Links are this peer's ways to the others.
func (p *Peer) Links() *peerlink.Links { return p.links }

// FSM returns the local replica.
func (p *Peer) FSM() *raftfsm.FSM { return p.store.FSM }

// Blobs gets the image blobs this node's VMs start from.
func (p *Peer) Blobs() *blobsource.Source { return p.blobs }

// Store returns the Raft store.
func (p *Peer) Store() *raftstore.Store { return p.store }

// Gossip returns the gossip layer.
func (p *Peer) Gossip() *gossip.Gossip { return p.gossip }

// API returns the HTTP API server.
func (p *Peer) API() *httpapi.Server { return p.api }
