package leader

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/raftstore"
)

// DomainTagPrefix marks the node tag that names a node's failure domain
// (a rack, a room, a site): "zone.rack-3". The leader spreads the
// replicas over the domains; nodes without such a tag share one.
const DomainTagPrefix = "zone."

// DefaultReplaceAfter is how long a replica may be dead before the leader
// takes it out of the Raft configuration and adds another in its place.
const DefaultReplaceAfter = 30 * time.Second

// candidate is a peer of the cluster as the replica plan sees it.
type candidate struct {
	Name   string
	Domain string
	// Alive: gossip has it alive; DeadFor is how long it has been dead
	// (or gone) when not.
	Alive   bool
	DeadFor time.Duration
	// InConfig and Voter place it in the Raft configuration; Pending
	// peers await an admin's approval and are no replicas.
	InConfig, Voter, Pending bool
}

// planReplicas says which peers to add as non-voting replicas and which
// replicas to take out of the Raft configuration, so that the cluster
// holds at most max replicas (approved non-voters), alive ones, spread
// over the failure domains: a replica dead for replaceAfter goes, and the
// live peers outside the configuration fill the places, each from the
// domain the voters and replicas cover least (by name among equals).
// Over the bound, the dead go first, then those of the most covered
// domain. A peer taken out follows the log through a member instead
// (node/follow).
func planReplicas(cands []candidate, max int, replaceAfter time.Duration) (add, remove []string) {
	covered := map[string]int{} // members of the configuration kept, by domain
	var kept, outside []candidate
	for _, c := range cands {
		switch {
		case c.InConfig && c.Voter:
			covered[c.Domain]++
		case c.InConfig && !c.Pending:
			if !c.Alive && c.DeadFor >= replaceAfter {
				remove = append(remove, c.Name)
				continue
			}
			kept = append(kept, c)
		case !c.InConfig && !c.Pending && c.Alive:
			outside = append(outside, c)
		}
	}
	for _, c := range kept {
		covered[c.Domain]++
	}
	for len(kept) > max {
		// the dead first, then the most covered domain's, the last name
		i := 0
		for j, c := range kept {
			worse := cmp.Or(cmp.Compare(b2i(!c.Alive), b2i(!kept[i].Alive)),
				cmp.Compare(covered[c.Domain], covered[kept[i].Domain]),
				strings.Compare(c.Name, kept[i].Name))
			if worse > 0 {
				i = j
			}
		}
		covered[kept[i].Domain]--
		remove = append(remove, kept[i].Name)
		kept = slices.Delete(kept, i, i+1)
	}
	slices.SortFunc(outside, func(a, b candidate) int { return strings.Compare(a.Name, b.Name) })
	for len(kept)+len(add) < max && len(outside) > 0 {
		i := 0
		for j, c := range outside {
			if covered[c.Domain] < covered[outside[i].Domain] {
				i = j
			}
		}
		covered[outside[i].Domain]++
		add = append(add, outside[i].Name)
		outside = slices.Delete(outside, i, i+1)
	}
	return add, remove
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// domainOf is a node's failure domain: its first tag that starts with
// DomainTagPrefix ("" without one).
func domainOf(tags []string) string {
	for _, t := range tags {
		if strings.HasPrefix(t, DomainTagPrefix) {
			return t
		}
	}
	return ""
}

// replanReplicas adds and removes non-voters so that the bounded replicas
// are the ones planReplicas chooses (Config.Replicas); inConfig is the
// Raft configuration as the pass left it, which it updates.
func (l *Leader) replanReplicas(ctx context.Context, byName map[string]gossip.Member, inConfig map[string]raftstore.Server) error {
	var cands []candidate
	seen := map[string]bool{}
	for name, m := range byName {
		seen[name] = true
		id, _ := l.cfg.FSM.PeerIdentity(name)
		s, in := inConfig[name]
		c := candidate{Name: name, Alive: m.State == gossip.StateAlive, InConfig: in, Voter: s.Voter, Pending: id.Pending}
		if !c.Alive {
			c.DeadFor = time.Since(m.Since)
		}
		if n, ok := l.cfg.FSM.Node(name); ok {
			c.Domain = domainOf(n.Tags)
		}
		cands = append(cands, c)
	}
	for name, s := range inConfig {
		if !seen[name] && name != l.cfg.Name {
			// in the configuration, unknown to gossip: dead since this term
			cands = append(cands, candidate{Name: name, InConfig: true, Voter: s.Voter, DeadFor: l.leaderFor()})
		}
	}
	after := l.cfg.ReplaceAfter
	if after <= 0 {
		after = DefaultReplaceAfter
	}
	add, remove := planReplicas(cands, l.cfg.Replicas, after)
	log := l.cfg.Log.With("part", "leader")
	for _, name := range remove {
		if err := l.cfg.Raft.RemoveServer(ctx, name); err != nil {
			return fmt.Errorf("remove replica %s: %w", name, err)
		}
		delete(inConfig, name)
		log.Info("took a replica out of the Raft group; it follows the log through a member", "peer", name)
	}
	for _, name := range add {
		id, _ := l.cfg.FSM.PeerIdentity(name)
		if err := l.cfg.Raft.AddNonvoter(ctx, name, id.RaftAddr); err != nil {
			return fmt.Errorf("add replica %s: %w", name, err)
		}
		inConfig[name] = raftstore.Server{ID: name, Address: id.RaftAddr}
		log.Info("added a replica", "peer", name)
	}
	return nil
}
