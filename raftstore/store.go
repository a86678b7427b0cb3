package raftstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/svc-project/svc/internal/logbridge"
	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/raftfsm"
)

// Timing holds the Raft timeouts. Zero fields take the production
// defaults below.
type Timing struct {
	Heartbeat   time.Duration
	Election    time.Duration
	LeaderLease time.Duration
	Commit      time.Duration
}

// The production timeouts: a follower that hears no leader for a random
// time between DefaultHeartbeat and twice it starts a pre-vote (raft's
// default: a peer that cannot win disrupts no one), and a leader that
// hears no quorum for DefaultLeaderLease steps down. Raft's own defaults
// (1 s, 1 s, 500 ms) are for WANs; peers of one site answer in
// milliseconds, and the leader sends heartbeats every tenth of
// DefaultHeartbeat. A follower asked for a pre-vote does not wait for its
// own timer when it too has not heard from the leader for a lease
// (prevote.go).
const (
	DefaultHeartbeat   = 400 * time.Millisecond
	DefaultElection    = 400 * time.Millisecond
	DefaultLeaderLease = 200 * time.Millisecond
)

// StoreConfig configures a Store.
type StoreConfig struct {
	// ID is the peer's Raft server id (its node name).
	ID string
	// DataDir holds raft.db and the snapshots.
	DataDir string
	// Listener is the Raft port, bound already (the peer must know its
	// address before it joins); the store closes it.
	Listener net.Listener
	// Advertise is the host:port others reach it on; the listener's when
	// empty.
	Advertise string
	// TLS, when set, authenticates every Raft connection both ways (nil:
	// plain TCP, for benchmarks that state the cost of TLS).
	TLS *PeerTLS
	// Gate optionally refuses traffic to some addresses (tests).
	Gate netgate.Gate
	// Timing tunes the Raft timeouts.
	Timing Timing
	// SnapshotThreshold is the number of log entries between snapshots, and
	// how many entries a snapshot keeps behind it (0: DefaultSnapshotThreshold).
	SnapshotThreshold uint64
	// SnapshotInterval is how often raft checks whether to snapshot (0:
	// DefaultSnapshotInterval).
	SnapshotInterval time.Duration
	// Recover makes this peer, which must hold Raft state, the one voter of
	// its cluster once no leader has answered it for RecoverProbe: the way
	// back for a cluster that lost its majority for good (recover.go).
	Recover      bool
	RecoverProbe time.Duration
	Log          *slog.Logger
}

// Snapshot defaults: a snapshot at least every 2048 entries, checked every 30 s.
const (
	DefaultSnapshotThreshold = 2048
	DefaultSnapshotInterval  = 30 * time.Second
)

// logCacheEntries is how many of the newest log entries a store keeps in
// memory (at most MaxCommandBytes each; most are well under 1 KiB): more
// than Raft sends in one append (MaxAppendEntries, 64).
const logCacheEntries = 256

// Store owns the Raft instance, its bolt log store and its file snapshots.
type Store struct {
	FSM  *raftfsm.FSM
	raft *raft.Raft
	bolt *raftboltdb.BoltStore
	// logs is the log as Raft reads it (its newest entries from memory),
	// for the followers' feed (entries.go).
	logs  raft.LogStore
	snaps raft.SnapshotStore
	// Recovered says what --recover found, when it ran.
	Recovered *Recovery
	trans     *fencedTransport
	log       *slog.Logger
	id        string
	addr      string
	had       bool
	m         *storeMetrics
	obsCh     chan raft.Observation
	obs       *raft.Observer
	// preVoteCh and preVoteObs carry the pre-vote requests this peer
	// receives (prevote.go).
	preVoteCh  chan raft.Observation
	preVoteObs *raft.Observer

	mu            sync.Mutex
	leaderChanged chan struct{} // closed and replaced when the leader changes
}

// Server is one member of the Raft configuration.
type Server struct {
	ID      string
	Address string
	Voter   bool
}

// OpenStore opens (or creates) the Raft state in cfg.DataDir and starts the
// Raft instance. It does not bootstrap a cluster; see BootstrapCluster.
func OpenStore(cfg StoreConfig, fsm *raftfsm.FSM) (*Store, error) {
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := filepath.Join(cfg.DataDir, "raft")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("raft data dir: %w", err)
	}
	hl := hclog.New(&hclog.LoggerOptions{
		Name:        "raft",
		Level:       hclog.Info,
		Output:      logbridge.Writer{Log: log},
		DisableTime: true,
	})
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("open raft log: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 3, hl)
	if err != nil {
		_ = bolt.Close()
		return nil, fmt.Errorf("open snapshots: %w", err)
	}
	layer, err := newStreamLayer(cfg.Listener, cfg.Advertise, cfg.Gate, cfg.TLS, log)
	if err != nil {
		_ = bolt.Close()
		return nil, err
	}
	trans := &fencedTransport{NetworkTransport: raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  layer,
		MaxPool: 3,
		// No pipelining: raft's pipeline deadlocks when a follower answers
		// an AppendEntries with Success=false (its decoder returns, the
		// sender parks on a full channel, and the follower never gets
		// another entry while heartbeats keep it from an election); seen
		// here with a peer that joins behind the log. Raft's own analysis
		// (hashicorp/raft#541) finds pipelining of little benefit anyway.
		MaxRPCsInFlight: 1,
		Timeout:         5 * time.Second,
		Logger:          hl,
	})}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = hl
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = DefaultHeartbeat, DefaultElection, DefaultLeaderLease
	if t := cfg.Timing; t.Heartbeat > 0 {
		rc.HeartbeatTimeout = t.Heartbeat
	}
	if t := cfg.Timing; t.Election > 0 {
		rc.ElectionTimeout = t.Election
	}
	if t := cfg.Timing; t.LeaderLease > 0 {
		rc.LeaderLeaseTimeout = t.LeaderLease
	}
	if t := cfg.Timing; t.Commit > 0 {
		rc.CommitTimeout = t.Commit
	}
	// Snapshots are frequent enough that a restarted peer replays a bounded
	// log before it has caught up (it serves nothing until then).
	rc.SnapshotThreshold, rc.TrailingLogs, rc.SnapshotInterval = DefaultSnapshotThreshold, DefaultSnapshotThreshold, DefaultSnapshotInterval
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
		rc.TrailingLogs = cfg.SnapshotThreshold
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	had, err := raft.HasExistingState(bolt, bolt, snaps)
	if err != nil {
		_ = trans.Close()
		_ = bolt.Close()
		return nil, fmt.Errorf("read raft state: %w", err)
	}
	// Replication and a follower's apply read back entries just written:
	// from memory, not a bolt read transaction per entry.
	logs, err := raft.NewLogCache(logCacheEntries, bolt)
	if err != nil {
		_ = trans.Close()
		_ = bolt.Close()
		return nil, fmt.Errorf("raft log cache: %w", err)
	}
	var recovered *Recovery
	if cfg.Recover {
		if recovered, err = recoverAlone(cfg, rc, fsm, logs, bolt, snaps, trans, had, log); err != nil {
			_ = trans.Close()
			_ = bolt.Close()
			return nil, err
		}
	}
	r, err := raft.NewRaft(rc, fsm, logs, bolt, snaps, trans)
	if err != nil {
		_ = trans.Close()
		_ = bolt.Close()
		return nil, fmt.Errorf("start raft: %w", err)
	}
	s := &Store{FSM: fsm, raft: r, bolt: bolt, logs: logs, snaps: snaps, Recovered: recovered, trans: trans, log: log, id: cfg.ID, addr: string(trans.LocalAddr()), had: had, m: newStoreMetrics(),
		leaderChanged: make(chan struct{})}
	s.obsCh = make(chan raft.Observation, 16)
	s.obs = raft.NewObserver(s.obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(s.obs)
	go s.countLeaderChanges()
	s.watchPreVotes(rc.LeaderLeaseTimeout)
	return s, nil
}

func (s *Store) countLeaderChanges() {
	for range s.obsCh {
		s.m.leaderChanges.Inc()
		s.mu.Lock()
		close(s.leaderChanged)
		s.leaderChanged = make(chan struct{})
		s.mu.Unlock()
	}
}

// LeaderChanged returns a channel that is closed when this peer next sees
// the leader change (or become known).
func (s *Store) LeaderChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaderChanged
}

// ID returns this peer's Raft server id.
func (s *Store) ID() string { return s.id }

// Addr returns the address the Raft transport advertises.
func (s *Store) Addr() string { return s.addr }

// HadState reports whether the data dir held Raft state when the store opened.
func (s *Store) HadState() bool { return s.had }

// BootstrapCluster writes the first configuration of a new cluster. Every
// peer that bootstraps must pass the same servers.
func (s *Store) BootstrapCluster(servers []Server) error {
	cfg := raft.Configuration{}
	for _, sv := range servers {
		suf := raft.Voter
		if !sv.Voter {
			suf = raft.Nonvoter
		}
		cfg.Servers = append(cfg.Servers, raft.Server{ID: raft.ServerID(sv.ID), Address: raft.ServerAddress(sv.Address), Suffrage: suf})
	}
	if err := s.raft.BootstrapCluster(cfg).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("bootstrap raft: %w", err)
	}
	return nil
}

// IsLeader reports whether this peer is the Raft leader.
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// Leader returns the leader's Raft address and id, empty when unknown.
func (s *Store) Leader() (addr, id string) {
	a, i := s.raft.LeaderWithID()
	return string(a), string(i)
}

// LeaderCh delivers true when this peer becomes leader and false when it
// stops being leader. It has one reader: the peer's leader loop.
func (s *Store) LeaderCh() <-chan bool { return s.raft.LeaderCh() }

// ApplyCommand encodes and proposes a command, waits until it is applied
// here (the leader) or ctx ends, and returns the FSM's answer.
func (s *Store) ApplyCommand(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	b, err := raftfsm.Encode(t, body)
	if err != nil {
		return nil, err
	}
	return s.Apply(ctx, b)
}

// Apply proposes raw command bytes; see ApplyCommand.
func (s *Store) Apply(ctx context.Context, cmd []byte) (any, error) {
	if len(cmd) > raftfsm.MaxCommandBytes {
		return nil, fmt.Errorf("apply %d bytes: %w (at most %d)", len(cmd), raftfsm.ErrTooLarge, raftfsm.MaxCommandBytes)
	}
	if err := s.writeLevel(ctx, cmd); err != nil {
		return nil, err
	}
	start := time.Now()
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
		if timeout <= 0 {
			return nil, fmt.Errorf("apply: %w", raftfsm.ErrTimeout)
		}
	}
	f := s.raft.Apply(cmd, timeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, mapRaftErr(err)
		}
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			// The caller stopped waiting (a worker whose VM was deleted).
			return nil, fmt.Errorf("apply: %w: the caller stopped waiting (%w); the write may still be applied", raftfsm.ErrTimeout, ctx.Err())
		}
		return nil, fmt.Errorf("apply: %w: the write may still be applied", raftfsm.ErrTimeout)
	}
	s.m.applyDuration.Observe(time.Since(start).Seconds())
	res, ok := f.Response().(raftfsm.Result)
	if !ok {
		return nil, nil
	}
	return res.Value, res.Err
}

// writeLevel refuses a command some voter's svc does not know yet (a
// cluster upgraded one host at a time): raftfsm.FSM.WriteLevel.
func (s *Store) writeLevel(ctx context.Context, cmd []byte) error {
	if len(cmd) == 0 || raftfsm.LevelOf(raftfsm.Type(cmd[0])) <= 1 {
		return nil
	}
	servers, err := s.Servers(ctx)
	if err != nil {
		return err
	}
	var voters []string
	for _, sv := range servers {
		if sv.Voter {
			voters = append(voters, sv.ID)
		}
	}
	return s.FSM.WriteLevel(raftfsm.Type(cmd[0]), voters)
}

func mapRaftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: %v", raftfsm.ErrNotLeader, err)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", raftfsm.ErrTimeout, err)
	}
	return err
}

// VerifyLeader confirms with a quorum that this peer is still the leader.
func (s *Store) VerifyLeader(ctx context.Context) error {
	return s.wait(ctx, s.raft.VerifyLeader())
}

// Barrier waits until every entry committed before it is applied here.
func (s *Store) Barrier(ctx context.Context) error {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	return s.wait(ctx, s.raft.Barrier(timeout))
}

func (s *Store) wait(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return mapRaftErr(err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %v", raftfsm.ErrTimeout, ctx.Err())
	}
}

// Servers returns the current Raft configuration.
func (s *Store) Servers(ctx context.Context) ([]Server, error) {
	f := s.raft.GetConfiguration()
	if err := s.wait(ctx, f); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	var out []Server
	for _, sv := range f.Configuration().Servers {
		out = append(out, Server{ID: string(sv.ID), Address: string(sv.Address), Voter: sv.Suffrage == raft.Voter})
	}
	return out, nil
}

// AddVoter adds (or promotes) a voting member. Leader only.
func (s *Store) AddVoter(ctx context.Context, id, addr string) error {
	return s.wait(ctx, s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 0))
}

// AddNonvoter adds a non-voting member. Leader only.
func (s *Store) AddNonvoter(ctx context.Context, id, addr string) error {
	return s.wait(ctx, s.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 0))
}

// RemoveServer removes a member. Leader only.
func (s *Store) RemoveServer(ctx context.Context, id string) error {
	return s.wait(ctx, s.raft.RemoveServer(raft.ServerID(id), 0, 0))
}

// Stats returns raft's own figures.
func (s *Store) Stats() map[string]string { return s.raft.Stats() }

// HandOver passes leadership to the most up-to-date voter, if this peer
// leads, so that a peer that stops does not leave the cluster to wait out an
// election. It does nothing on a follower.
func (s *Store) HandOver(ctx context.Context) error {
	if s.raft.State() != raft.Leader {
		return nil
	}
	return s.wait(ctx, s.raft.LeadershipTransfer())
}

// HandOverTo passes leadership to the voter id at addr, if this peer leads.
func (s *Store) HandOverTo(ctx context.Context, id, addr string) error {
	if s.raft.State() != raft.Leader {
		return nil
	}
	return s.wait(ctx, s.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(addr)))
}

// Close stops Raft and closes the log, after a snapshot of the state when
// snapshot is set (so that a restart replays little). It does not leave the
// cluster.
func (s *Store) Close(snapshot bool) error {
	if snapshot {
		if err := s.raft.Snapshot().Error(); err != nil && !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			s.log.Warn("snapshot on close", "err", err)
		}
	}
	// Shut down, then close the transport before waiting for raft's
	// goroutines: one blocked in an RPC to a peer that stopped answering
	// would otherwise hold the shutdown until that RPC's deadline (or for
	// ever, where it waits on the transport itself).
	shutdown := s.raft.Shutdown()
	terr := s.trans.Close()
	err := shutdown.Error()
	s.trans.fence() // no heartbeat writes the term once the log store is closed
	s.raft.DeregisterObserver(s.obs)
	close(s.obsCh)
	s.raft.DeregisterObserver(s.preVoteObs)
	close(s.preVoteCh)
	if terr != nil && err == nil {
		err = terr
	}
	if cerr := s.bolt.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}
