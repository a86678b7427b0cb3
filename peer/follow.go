package peer

import (
	"context"
	"hash/fnv"
	"slices"
	"sync"
	"time"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/node/follow"
)

// In a cluster whose Raft group is bounded (Config.Replicas), a peer the
// leader did not take into the group follows the log through a member
// (node/follow): while it hears no leader over Raft, a Follower feeds its
// FSM from the feed of a member that gossip shows; once Raft reaches it
// (the leader made it a replica or a voter), the follower stops, and
// Raft's entries it already holds are not applied again.

// MaxReplicas bounds Config.Replicas: each replica costs the leader a
// stream of every entry, which is what the bound is for.
const MaxReplicas = 16

// followAfter is how long a peer hears no leader over Raft before it
// follows the log through a member: past an election or two, so that a
// member does not follow through a leader change.
const followAfter = 3 * time.Second

// followCheck is how often the peer looks at its place.
const followCheck = 500 * time.Millisecond

// follower is the peer's place in the Raft group, gossiped, and its
// Follower while it is outside it.
type follower struct {
	p    *Peer
	mu   sync.Mutex
	f    *follow.Follower
	stop context.CancelFunc
	done chan struct{}
	role string // the role last gossiped
}

// raftRole is this peer's place in the Raft group as it knows it (a
// gossip.Role..., or "" outside it).
func (fl *follower) raftRole() string {
	p := fl.p
	switch {
	case p.store == nil:
		return ""
	case p.store.IsLeader():
		return gossip.RoleLeader
	case time.Since(p.store.LastContact()) > followAfter:
		return ""
	}
	ctx, cancel := context.WithTimeout(p.ctx, time.Second)
	defer cancel()
	servers, err := p.store.Servers(ctx)
	if err != nil {
		return ""
	}
	for _, s := range servers {
		if s.ID == p.cfg.Name {
			if s.Voter {
				return gossip.RoleVoter
			}
			return gossip.RoleReplica
		}
	}
	return ""
}

// run keeps the follower running while this peer is outside the Raft
// group, and its role in its gossip report, until ctx ends.
func (fl *follower) run(ctx context.Context) {
	p := fl.p
	t := time.NewTicker(followCheck)
	defer t.Stop()
	defer fl.stopFollowing()
	for {
		role := fl.raftRole()
		fl.mu.Lock()
		changed := role != fl.role
		fl.role = role
		fl.mu.Unlock()
		if changed {
			if err := p.gossip.SetReport(p.report()); err != nil {
				p.cfg.Log.Warn("gossip report", "err", err)
			}
		}
		pending := p.member != nil && p.member.Pending() != ""
		if role == "" && !pending && p.cfg.Replicas > 0 {
			fl.start(ctx)
		} else {
			fl.stopFollowing()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (fl *follower) start(ctx context.Context) {
	p := fl.p
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.f != nil {
		return
	}
	f := &follow.Follower{FSM: p.FSM(), Sources: fl.sources, HTTP: p.peerHTTP, Log: p.cfg.Log.With("part", "follow")}
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Run(fctx) }()
	fl.f, fl.stop, fl.done = f, stop, done
	p.cfg.Log.Info("outside the Raft group: following the log through a member")
}

func (fl *follower) stopFollowing() {
	p := fl.p
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.f == nil {
		return
	}
	fl.stop()
	<-fl.done
	fl.f = nil
	p.cfg.Log.Info("in the Raft group: no longer following the log through a member")
}

// leader is the leader as the member this peer follows knows it
// ("" when it follows none).
func (fl *follower) leader() string {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.f == nil {
		return ""
	}
	return fl.f.Status().Leader
}

// sources are the members to follow the log through, as gossip shows
// them alive: replicas before voters before the leader, so that the
// followers' load falls on the replicas, and among equals in an order of
// this peer's own (a hash of both names), so that the followers spread.
func (fl *follower) sources() []string {
	p := fl.p
	type src struct {
		url  string
		rank int
		h    uint32
	}
	var out []src
	for _, m := range p.gossip.Members() {
		if m.Name == p.cfg.Name || m.State != gossip.StateAlive || m.Report.Raft == "" {
			continue
		}
		u := p.links.URL(m.Name)
		if u == "" {
			continue
		}
		rank := map[string]int{gossip.RoleReplica: 0, gossip.RoleVoter: 1, gossip.RoleLeader: 2}[m.Report.Raft]
		h := fnv.New32a()
		h.Write([]byte(p.cfg.Name + "/" + m.Name))
		out = append(out, src{u, rank, h.Sum32()})
	}
	slices.SortFunc(out, func(a, b src) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return int(int64(a.h) - int64(b.h))
	})
	urls := make([]string, len(out))
	for i, s := range out {
		urls[i] = s.url
	}
	return urls
}

// gossiped is the role the peer last gossiped.
func (f *follower) gossiped() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.role
}
