package leader

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

func (l *Leader) ensureInit(ctx context.Context) error {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if ok, _ := l.cfg.FSM.Initialized(); ok {
		if len(l.cfg.FSM.SigningKey()) > 0 {
			return nil
		}
		key, err := newSigningKey()
		if err != nil {
			return err
		}
		if _, err := l.cfg.Raft.ApplyCommand(actx, raftfsm.TypeSigningKeySet, raftfsm.SigningKeySet{SigningKey: key}); err != nil {
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
	if _, err := l.cfg.Raft.ApplyCommand(actx, raftfsm.TypeInit, raftfsm.Init{ClusterID: hex.EncodeToString(id), Time: time.Now().UTC(), SigningKey: key}); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	// This peer made the cluster: it hands out the first admin token.
	if l.cfg.OnInit != nil {
		l.wg.Go(l.cfg.OnInit)
	}
	return nil
}

// reconcileMembership adds live members to Raft (voters while there are
// fewer than the target, non-voters beyond), removes members that are gone
// for good, and promotes non-voters to fill the voters they leave.
func (l *Leader) reconcileMembership(ctx context.Context) error {
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

	for _, m := range members {
		if m.State != gossip.StateAlive || m.Report.RaftAddr == "" {
			continue
		}
		s, ok := inConfig[m.Name]
		switch {
		case !ok && voters < target:
			if err := l.cfg.Raft.AddVoter(ctx, m.Name, m.Report.RaftAddr); err != nil {
				return fmt.Errorf("add voter %s: %w", m.Name, err)
			}
			voters++
			log.Info("added voter", "peer", m.Name)
		case !ok:
			if err := l.cfg.Raft.AddNonvoter(ctx, m.Name, m.Report.RaftAddr); err != nil {
				return fmt.Errorf("add non-voter %s: %w", m.Name, err)
			}
			log.Info("added non-voter", "peer", m.Name)
		case s.Address != m.Report.RaftAddr:
			add := l.cfg.Raft.AddNonvoter
			if s.Voter {
				add = l.cfg.Raft.AddVoter
			}
			if err := add(ctx, m.Name, m.Report.RaftAddr); err != nil {
				return fmt.Errorf("update address of %s: %w", m.Name, err)
			}
			log.Info("updated peer address", "peer", m.Name, "raft", m.Report.RaftAddr)
		}
	}

	for _, s := range servers {
		if s.ID == l.cfg.Name {
			continue
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
	}

	for _, m := range members {
		if voters >= target {
			break
		}
		s, ok := inConfig[m.Name]
		if !ok || s.Voter || m.State != gossip.StateAlive {
			continue
		}
		if err := l.cfg.Raft.AddVoter(ctx, m.Name, m.Report.RaftAddr); err != nil {
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
		Arch: r.Arch, Hypervisor: r.Hypervisor, Version: r.Version, Capacity: raftfsm.Capacity{CPU: r.CPU, MemoryBytes: r.MemoryBytes, GPU: r.GPU},
		CPUOvercommit: r.Overcommit,
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
		seen[m.Name] = true
		phase, reason := wantPhase(m)
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
		if ok && n.Phase != phase {
			if err := l.setPhase(ctx, m.Name, phase, reason, now); err != nil {
				return err
			}
		}
	}
	for _, n := range l.cfg.FSM.Nodes() {
		if seen[n.Name] {
			continue
		}
		if n.Phase == api.PhaseReady && l.leaderFor() > l.cfg.NotReadyGrace {
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
