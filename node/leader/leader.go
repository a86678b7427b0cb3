package leader

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// ensureInit proposes the Init of the cluster this peer formed, once; a
// leader that did not form the cluster has none to propose (its cluster
// was initialised before it joined).
func (l *Leader) ensureInit(ctx context.Context) error {
	if ok, _ := l.cfg.FSM.Initialized(); ok {
		return nil
	}
	if l.cfg.Restoring != nil && l.cfg.Restoring() {
		return nil
	}
	init, ok := l.cfg.Init()
	if !ok {
		return errors.New("the cluster is not initialised, and this peer did not form it")
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := l.cfg.Raft.ApplyCommand(actx, raftfsm.TypeInit, init); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	// This peer made the cluster: it hands out the first admin token.
	if l.cfg.OnInit != nil {
		l.wg.Go(l.cfg.OnInit)
	}
	return nil
}

// reconcileMembership keeps the Raft configuration to the peers the
// cluster admitted: live admitted members are added (voters while there
// are fewer than the target, non-voters beyond) at the Raft address they
// proved, never one gossip claims; servers the cluster removed (or never
// admitted) go at once, members gone for good after ReapAfter; non-voters
// are promoted to fill the voters that left.
func (l *Leader) reconcileMembership(ctx context.Context) error {
	if ok, _ := l.cfg.FSM.Initialized(); !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	servers, err := l.cfg.Raft.Servers(ctx)
	if err != nil {
		return err
	}
	members := l.cfg.Pool.Members()
	byName := map[string]gossip.Member{}
	alive := 0
	for _, m := range members {
		if _, ok := l.cfg.FSM.PeerIdentity(m.Name); !ok {
			continue // not a peer of the cluster: nothing it gossips counts
		}
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
	target := VoterTarget(alive)
	log := l.cfg.Log.With("part", "leader")

	for _, s := range servers {
		if _, ok := l.cfg.FSM.PeerIdentity(s.ID); ok {
			continue
		}
		if err := l.cfg.Raft.RemoveServer(ctx, s.ID); err != nil {
			return fmt.Errorf("remove %s: %w", s.ID, err)
		}
		delete(inConfig, s.ID)
		if s.Voter {
			voters--
		}
		log.Info("removed a server the cluster does not admit", "peer", s.ID)
	}

	for _, m := range byName {
		if m.State != gossip.StateAlive {
			continue
		}
		id, _ := l.cfg.FSM.PeerIdentity(m.Name)
		s, ok := inConfig[m.Name]
		switch {
		case !ok && voters < target && !id.Pending:
			if err := l.cfg.Raft.AddVoter(ctx, m.Name, id.RaftAddr); err != nil {
				return fmt.Errorf("add voter %s: %w", m.Name, err)
			}
			voters++
			log.Info("added voter", "peer", m.Name)
		case !ok && l.cfg.Replicas > 0 && !id.Pending:
			// a place among the bounded replicas, or none (replanReplicas)
		case !ok:
			if err := l.cfg.Raft.AddNonvoter(ctx, m.Name, id.RaftAddr); err != nil {
				return fmt.Errorf("add non-voter %s: %w", m.Name, err)
			}
			log.Info("added non-voter", "peer", m.Name)
		case s.Address != id.RaftAddr:
			add := l.cfg.Raft.AddNonvoter
			if s.Voter {
				add = l.cfg.Raft.AddVoter
			}
			if err := add(ctx, m.Name, id.RaftAddr); err != nil {
				return fmt.Errorf("update address of %s: %w", m.Name, err)
			}
			log.Info("updated peer address", "peer", m.Name, "raft", id.RaftAddr)
		}
	}

	for _, s := range servers {
		if s.ID == l.cfg.Name {
			continue
		}
		if _, ok := inConfig[s.ID]; !ok {
			continue // removed above
		}
		m, ok := byName[s.ID]
		gone := (ok && m.State == gossip.StateLeft) ||
			(ok && m.State == gossip.StateDead && time.Since(m.Since) > l.cfg.ReapAfter) ||
			(!ok && l.leaderFor() > l.cfg.ReapAfter)
		if !gone {
			continue
		}
		if err := l.cfg.Raft.RemoveServer(ctx, s.ID); err != nil {
			return fmt.Errorf("remove %s: %w", s.ID, err)
		}
		if s.Voter {
			voters--
		}
		log.Info("removed peer that is gone for good", "peer", s.ID)
		l.reap(ctx, s.ID)
	}

	if l.cfg.Replicas > 0 {
		if err := l.replanReplicas(ctx, byName, inConfig); err != nil {
			return err
		}
	}

	for _, m := range members {
		if voters >= target {
			break
		}
		s, ok := inConfig[m.Name]
		if !ok || s.Voter || m.State != gossip.StateAlive {
			continue
		}
		if id, _ := l.cfg.FSM.PeerIdentity(m.Name); id.Pending {
			continue // a pending peer never votes
		}
		if err := l.cfg.Raft.AddVoter(ctx, m.Name, s.Address); err != nil {
			return fmt.Errorf("promote %s: %w", m.Name, err)
		}
		voters++
		log.Info("promoted non-voter", "peer", m.Name)
	}
	return nil
}

// reap removes for good a peer gone for ReapAfter: it is no longer
// admitted, and can never connect again. A node that still has VMs keeps
// its identity (its VMs are the admin's to delete, after which 'svc node
// remove' or the next pass removes it).
func (l *Leader) reap(ctx context.Context, name string) {
	if l.cfg.Remove == nil {
		return
	}
	if _, ok := l.cfg.FSM.PeerIdentity(name); !ok {
		return
	}
	if n, ok := l.cfg.FSM.Node(name); ok && n.Used != (raftfsm.Usage{}) {
		l.cfg.Log.Warn("a peer gone for good keeps its identity while VMs are placed on it", "peer", name)
		return
	}
	if err := l.cfg.Remove(ctx, name, "reaped after --reap-after"); err != nil {
		l.cfg.Log.Warn("remove a peer gone for good", "peer", name, "err", err)
	}
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

// facts turns a member's gossip report into the node facts of the state. A
// node that offers no shared storage always says why (a report cut to fit
// gossip may have lost it).
func facts(m gossip.Member) raftfsm.NodeFacts {
	r := m.Report
	if !r.SharedStorage && r.SharedStorageWhy == "" {
		r.SharedStorageWhy = "the peer did not say why"
	}
	return raftfsm.NodeFacts{
		Addr: r.Addr, APIAddr: r.APIAddr, RaftAddr: r.RaftAddr, GossipAddr: m.GossipAddr, TLSPort: r.TLSPort,
		Arch: r.Arch, Hypervisor: r.Hypervisor, Version: r.Version, Level: r.Level, Capacity: raftfsm.Capacity{CPU: r.CPU, MemoryBytes: r.MemoryBytes, GPU: r.GPU},
		CPUOvercommit: r.Overcommit, SharedStorage: r.SharedStorage, SharedStorageWhy: r.SharedStorageWhy,
		DiskRoom: r.DiskRoom, DiskRoomKnown: r.DiskKnown,
	}
}

// reconcileNodes records new peers and changed facts, and READY / NOT READY
// transitions; nothing is written while nothing changes.
func (l *Leader) reconcileNodes(ctx context.Context) error {
	if ok, _ := l.cfg.FSM.Initialized(); !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	now := time.Now().UTC()
	seen := map[string]bool{}
	for _, m := range l.cfg.Pool.Members() {
		if _, ok := l.cfg.FSM.PeerIdentity(m.Name); !ok {
			continue // not a peer of the cluster
		}
		seen[m.Name] = true
		phase, reason := wantPhase(m)
		if id, _ := l.cfg.FSM.PeerIdentity(m.Name); id.Pending && phase == api.PhaseReady {
			// the leader's own word, whatever the peer gossips
			phase, reason = api.PhaseNotReady, fmt.Sprintf("awaits an admin's approval: svc node approve %s", m.Name)
		}
		n, ok := l.cfg.FSM.Node(m.Name)
		if m.State == gossip.StateAlive && (!ok || n.NodeFacts != facts(m)) {
			_, err := l.cfg.Raft.ApplyCommand(ctx, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{
				Name: m.Name, NodeFacts: facts(m), Phase: phase, Time: now,
			})
			if err != nil {
				return fmt.Errorf("record node %s: %w", m.Name, err)
			}
			n, ok = l.cfg.FSM.Node(m.Name)
		}
		if ok && (n.Phase != phase || n.PhaseReason != reason) {
			if err := l.setPhase(ctx, m.Name, phase, reason, now); err != nil {
				return err
			}
		}
	}
	for _, n := range l.cfg.FSM.Nodes() {
		if seen[n.Name] {
			continue
		}
		if n.Ready() && l.leaderFor() > l.cfg.NotReadyGrace {
			if err := l.setPhase(ctx, n.Name, api.PhaseNotReady, "peer is not in the gossip pool", now); err != nil {
				return err
			}
		}
	}
	l.nudgeAbsentPeers()
	return nil
}

func (l *Leader) setPhase(ctx context.Context, name, phase, reason string, now time.Time) error {
	_, err := l.cfg.Raft.ApplyCommand(ctx, raftfsm.TypeNodeSetPhase, raftfsm.NodeSetPhase{Name: name, Phase: phase, Reason: reason, Time: now})
	if err != nil {
		return fmt.Errorf("set phase of %s: %w", name, err)
	}
	l.cfg.Log.Info("node phase changed", "node", name, "phase", phase, "reason", reason)
	return nil
}

// nudgeInterval spaces the leader's attempts to reach a peer that gossip
// does not show alive.
const nudgeInterval = 10 * time.Second

// nudgeAbsentPeers asks gossip to contact known peers that are not alive in
// the pool (e.g. restarted with no --join and no reachable remembered peer).
func (l *Leader) nudgeAbsentPeers() {
	alive := map[string]bool{}
	for _, m := range l.cfg.Pool.Members() {
		if m.State == gossip.StateAlive {
			alive[m.Name] = true
		}
	}
	var addrs []string
	l.mu.Lock()
	if l.nudged == nil {
		l.nudged = map[string]time.Time{}
	}
	for _, n := range l.cfg.FSM.Nodes() {
		if alive[n.Name] || n.GossipAddr == "" || time.Since(l.nudged[n.Name]) < nudgeInterval {
			continue
		}
		l.nudged[n.Name] = time.Now()
		addrs = append(addrs, n.GossipAddr)
	}
	l.mu.Unlock()
	if len(addrs) == 0 {
		return
	}
	l.wg.Go(func() {
		ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
		defer cancel()
		_, _ = l.cfg.Pool.Join(ctx, addrs)
	})
}
