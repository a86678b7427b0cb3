package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// leaderRun is one term's leader work in flight.
type leaderRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *Peer) startLead() *leaderRun {
	ctx, cancel := context.WithCancel(p.ctx)
	r := &leaderRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		p.lead(ctx)
	}()
	return r
}

// leaderLoop runs the leader's work while this peer leads.
func (p *Peer) leaderLoop() {
	var run *leaderRun
	stop := func() {
		if run != nil {
			run.cancel()
			<-run.done
			run = nil
		}
	}
	defer stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case isLeader := <-p.store.LeaderCh():
			if isLeader && run == nil {
				run = p.startLead()
			} else if !isLeader {
				stop()
			}
		}
	}
}

// lead is the leader's work: initialise a new cluster, then keep Raft
// membership and node records in step with gossip.
func (p *Peer) lead(ctx context.Context) {
	p.mu.Lock()
	p.leaderSince = time.Now()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.leaderSince, p.leaderReady = time.Time{}, false
		p.mu.Unlock()
	}()
	log := p.cfg.Log.With("part", "leader")
	log.Info("became leader")
	// Make sure every earlier entry is applied before reading the state; keep
	// trying for as long as this term lasts.
	for {
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.store.Barrier(bctx)
		cancel()
		if err == nil {
			break
		}
		log.Warn("barrier failed, retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.cfg.ReconcileInterval):
		}
	}
	p.mu.Lock()
	p.leaderReady = true
	p.mu.Unlock()
	p.markCaughtUp("leads and applied its term's barrier")
	tick := time.NewTicker(p.cfg.ReconcileInterval)
	defer tick.Stop()
	for {
		changed := p.gossip.Changed()
		if err := p.ensureInit(ctx); err != nil && ctx.Err() == nil {
			log.Error("cannot initialise the cluster", "err", err)
		}
		if err := p.reconcileMembership(ctx); err != nil && ctx.Err() == nil {
			log.Warn("membership", "err", err)
		}
		if err := p.reconcileNodes(ctx); err != nil && ctx.Err() == nil {
			log.Warn("node status", "err", err)
		}
		if err := p.jobs.ReconcileJobs(ctx); err != nil && ctx.Err() == nil {
			log.Warn("jobs", "err", err)
		}
		select {
		case <-ctx.Done():
			log.Info("leader work stopped")
			return
		case <-tick.C:
		case <-changed:
		}
	}
}

func (p *Peer) ensureInit(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ok, _ := p.FSM().Initialized(); ok {
		if len(p.FSM().SigningKey()) > 0 {
			return nil
		}
		key, err := newSigningKey()
		if err != nil {
			return err
		}
		if _, err := p.store.ApplyCommand(actx, raftfsm.TypeSigningKeySet, raftfsm.SigningKeySet{SigningKey: key}); err != nil {
			return fmt.Errorf("signing key: %w", err)
		}
		return nil
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return fmt.Errorf("cluster id: %w", err)
	}
	key, err := newSigningKey()
	if err != nil {
		return err
	}
	if _, err := p.store.ApplyCommand(actx, raftfsm.TypeInit, raftfsm.Init{ClusterID: hex.EncodeToString(id), Time: time.Now().UTC(), SigningKey: key}); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	// This peer made the cluster: it hands out the first admin token.
	p.goRun(func() {
		if err := p.writeAdminToken(p.ctx); err != nil {
			p.cfg.Log.Error("cannot write the admin token", "err", err)
		}
	})
	return nil
}

// reconcileMembership adds live members to Raft (voters while there are
// fewer than the target, non-voters beyond), removes members that are gone
// for good, and promotes non-voters to fill the voters they leave.
func (p *Peer) reconcileMembership(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	servers, err := p.store.Servers(ctx)
	if err != nil {
		return err
	}
	members := p.gossip.Members()
	byName := map[string]gossip.Member{}
	alive := 0
	for _, m := range members {
		byName[m.Name] = m
		if m.State == gossip.StateAlive {
			alive++
		}
	}
	inConfig := map[string]raftstore.Server{}
	voters := 0
	for _, s := range servers {
		inConfig[s.ID] = s
		if s.Voter {
			voters++
		}
	}
	target := voterTarget(alive)
	log := p.cfg.Log.With("part", "leader")

	for _, m := range members {
		if m.State != gossip.StateAlive || m.Report.RaftAddr == "" {
			continue
		}
		s, ok := inConfig[m.Name]
		switch {
		case !ok && voters < target:
			if err := p.store.AddVoter(ctx, m.Name, m.Report.RaftAddr); err != nil {
				return fmt.Errorf("add voter %s: %w", m.Name, err)
			}
			voters++
			log.Info("added voter", "peer", m.Name)
		case !ok:
			if err := p.store.AddNonvoter(ctx, m.Name, m.Report.RaftAddr); err != nil {
				return fmt.Errorf("add non-voter %s: %w", m.Name, err)
			}
			log.Info("added non-voter", "peer", m.Name)
		case s.Address != m.Report.RaftAddr:
			add := p.store.AddNonvoter
			if s.Voter {
				add = p.store.AddVoter
			}
			if err := add(ctx, m.Name, m.Report.RaftAddr); err != nil {
				return fmt.Errorf("update address of %s: %w", m.Name, err)
			}
			log.Info("updated peer address", "peer", m.Name, "raft", m.Report.RaftAddr)
		}
	}

	for _, s := range servers {
		if s.ID == p.cfg.Name {
			continue
		}
		m, ok := byName[s.ID]
		gone := (ok && m.State == gossip.StateLeft) ||
			(ok && m.State == gossip.StateDead && time.Since(m.Since) > p.cfg.ReapAfter) ||
			(!ok && p.leaderFor() > p.cfg.ReapAfter)
		if !gone {
			continue
		}
		if err := p.store.RemoveServer(ctx, s.ID); err != nil {
			return fmt.Errorf("remove %s: %w", s.ID, err)
		}
		if s.Voter {
			voters--
		}
		log.Info("removed peer that is gone for good", "peer", s.ID)
	}

	for _, m := range members {
		if voters >= target {
			break
		}
		s, ok := inConfig[m.Name]
		if !ok || s.Voter || m.State != gossip.StateAlive {
			continue
		}
		if err := p.store.AddVoter(ctx, m.Name, m.Report.RaftAddr); err != nil {
			return fmt.Errorf("promote %s: %w", m.Name, err)
		}
		voters++
		log.Info("promoted non-voter", "peer", m.Name)
	}
	return nil
}

// wantPhase is the phase a member's node should have, with the reason.
func wantPhase(m gossip.Member) (string, string) {
	switch {
	case m.State == gossip.StateLeft:
		return api.PhaseNotReady, "peer left the cluster"
	case m.State == gossip.StateDead:
		return api.PhaseNotReady, "peer stopped answering at " + m.Since.UTC().Format(time.RFC3339)
	case m.Report.Problem != "":
		return api.PhaseNotReady, m.Report.Problem
	}
	return api.PhaseReady, ""
}

// facts turns a member's gossip report into the node facts of the state.
func facts(m gossip.Member) raftfsm.NodeFacts {
	r := m.Report
	return raftfsm.NodeFacts{
		Addr: r.Addr, APIAddr: r.APIAddr, RaftAddr: r.RaftAddr, GossipAddr: m.GossipAddr, TLSPort: r.TLSPort,
		Arch: r.Arch, Version: r.Version, Capacity: raftfsm.Capacity{CPU: r.CPU, MemoryBytes: r.MemoryBytes, GPU: r.GPU},
		CPUOvercommit: r.Overcommit,
	}
}

// reconcileNodes records new peers and changed facts, and READY / NOT READY
// transitions; nothing is written while nothing changes.
func (p *Peer) reconcileNodes(ctx context.Context) error {
	if ok, _ := p.FSM().Initialized(); !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := time.Now().UTC()
	seen := map[string]bool{}
	for _, m := range p.gossip.Members() {
		seen[m.Name] = true
		phase, reason := wantPhase(m)
		n, ok := p.FSM().Node(m.Name)
		if m.State == gossip.StateAlive && (!ok || n.NodeFacts != facts(m)) {
			_, err := p.store.ApplyCommand(ctx, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{
				Name: m.Name, NodeFacts: facts(m), Phase: phase, Time: now,
			})
			if err != nil {
				return fmt.Errorf("record node %s: %w", m.Name, err)
			}
			n, ok = p.FSM().Node(m.Name)
		}
		if ok && n.Phase != phase {
			if err := p.setPhase(ctx, m.Name, phase, reason, now); err != nil {
				return err
			}
		}
	}
	for _, n := range p.FSM().Nodes() {
		if seen[n.Name] {
			continue
		}
		if n.Phase == api.PhaseReady && p.leaderFor() > p.cfg.NotReadyGrace {
			if err := p.setPhase(ctx, n.Name, api.PhaseNotReady, "peer is not in the gossip pool", now); err != nil {
				return err
			}
		}
	}
	p.nudgeAbsentPeers()
	return nil
}

func (p *Peer) setPhase(ctx context.Context, name, phase, reason string, now time.Time) error {
	_, err := p.store.ApplyCommand(ctx, raftfsm.TypeNodeSetPhase, raftfsm.NodeSetPhase{Name: name, Phase: phase, Reason: reason, Time: now})
	if err != nil {
		return fmt.Errorf("set phase of %s: %w", name, err)
	}
	p.cfg.Log.Info("node phase changed", "node", name, "phase", phase, "reason", reason)
	return nil
}

// nudgeInterval spaces the leader's attempts to reach a peer that gossip
// does not show alive.
const nudgeInterval = 10 * time.Second

// nudgeAbsentPeers asks gossip to contact known peers that are not alive in
// the pool (e.g. restarted with no --join and no reachable remembered peer).
func (p *Peer) nudgeAbsentPeers() {
	alive := map[string]bool{}
	for _, m := range p.gossip.Members() {
		if m.State == gossip.StateAlive {
			alive[m.Name] = true
		}
	}
	var addrs []string
	p.mu.Lock()
	if p.nudged == nil {
		p.nudged = map[string]time.Time{}
	}
	for _, n := range p.FSM().Nodes() {
		if alive[n.Name] || n.GossipAddr == "" || time.Since(p.nudged[n.Name]) < nudgeInterval {
			continue
		}
		p.nudged[n.Name] = time.Now()
		addrs = append(addrs, n.GossipAddr)
	}
	p.mu.Unlock()
	if len(addrs) == 0 {
		return
	}
	p.goRun(func() {
		ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
		defer cancel()
		_, _ = p.gossip.Join(ctx, addrs)
	})
}
