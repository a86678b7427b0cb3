package leader

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/fsmtest"
)

// pool is a gossip pool the test sets, which records the addresses it was
// asked to join.
type pool struct {
	mu      sync.Mutex
	members []gossip.Member
	joined  []string
}

func (p *pool) Members() []gossip.Member {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.members)
}
func (p *pool) set(m ...gossip.Member) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.members = m
}
func (p *pool) Changed() <-chan struct{} { return make(chan struct{}) }
func (p *pool) Join(_ context.Context, addrs []string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.joined = append(p.joined, addrs...)
	return len(addrs), nil
}
func (p *pool) joins() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.joined)
}

// The leader's node records follow gossip, alone (no cluster): a peer of
// the cluster that gossips is recorded READY with its report's facts; one
// gossip declares dead, or that reports a problem, goes NOT READY with the
// reason; a changed report changes its facts; a member that is no peer of the cluster is not recorded; a node
// gossip does not know goes NOT READY once the term is older than the
// grace, and the pool is asked to reach it; a pass with nothing new writes
// nothing.
func TestReconcileNodes(t *testing.T) {
	r := &fsmRaft{fsmtest.New()}
	t0 := time.Now().UTC().Add(-time.Hour)
	r.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c", t0))
	// "first" is TestInit's peer; "old" a node recorded earlier, whose
	// peer gossip no longer knows.
	r.Must(t, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: "old", Phase: api.PhaseReady, NodeFacts: raftfsm.NodeFacts{
		Addr: "10.0.0.9", GossipAddr: "10.0.0.9:7946", Capacity: raftfsm.Capacity{CPU: 2, MemoryBytes: 1 << 30}}})
	p := &pool{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := New(Config{Name: "first", FSM: r.FSM, Raft: r, Pool: p, NotReadyGrace: time.Minute})
	l.since, l.ctx = time.Now().Add(-time.Hour), ctx // a term older than the grace
	defer l.wg.Wait()
	report := gossip.Report{Addr: "127.0.0.1", APIAddr: "127.0.0.1:8080", RaftAddr: "127.0.0.1:7000", CPU: 4, MemoryBytes: 8 << 30, Arch: "amd64"}
	alive := gossip.Member{Name: "first", GossipAddr: "127.0.0.1:7946", State: gossip.StateAlive, Report: report}
	stranger := gossip.Member{Name: "stranger", GossipAddr: "10.9.9.9:7946", State: gossip.StateAlive, Report: report}

	node := func(name string) raftfsm.NodeView {
		t.Helper()
		n, _ := r.FSM.Node(name)
		return n
	}
	pass := func(members ...gossip.Member) {
		t.Helper()
		p.set(members...)
		if err := l.reconcileNodes(ctx); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name    string
		members []gossip.Member
		check   func(t *testing.T)
	}{
		{name: "a peer that gossips is recorded READY", members: []gossip.Member{alive, stranger}, check: func(t *testing.T) {
			n := node("first")
			if n.Phase != api.PhaseReady || n.Capacity.CPU != 4 || n.APIAddr != "127.0.0.1:8080" || n.GossipAddr != "127.0.0.1:7946" {
				t.Fatalf("first: %+v", n)
			}
			if _, ok := r.FSM.Node("stranger"); ok {
				t.Fatal("a member that is no peer of the cluster was recorded")
			}
			if n := node("old"); n.Phase != api.PhaseNotReady || n.PhaseReason != "peer is not in the gossip pool" {
				t.Fatalf("old: %s %q", n.Phase, n.PhaseReason)
			}
		}},
		{name: "a problem it reports", members: []gossip.Member{func() gossip.Member {
			m := alive
			m.Report.Problem = "the hypervisor does not answer"
			return m
		}()}, check: func(t *testing.T) {
			if n := node("first"); n.Phase != api.PhaseNotReady || n.PhaseReason != "the hypervisor does not answer" {
				t.Fatalf("first: %s %q", n.Phase, n.PhaseReason)
			}
		}},
		{name: "back", members: []gossip.Member{alive}, check: func(t *testing.T) {
			if n := node("first"); n.Phase != api.PhaseReady {
				t.Fatalf("first: %s %q", n.Phase, n.PhaseReason)
			}
		}},
		{name: "its report changes", members: []gossip.Member{func() gossip.Member {
			m := alive
			m.Report.CPU, m.Report.Version = 8, "v2"
			return m
		}()}, check: func(t *testing.T) {
			if n := node("first"); n.Capacity.CPU != 8 || n.Version != "v2" || n.Phase != api.PhaseReady {
				t.Fatalf("first: %+v", n)
			}
		}},
		{name: "declared dead", members: []gossip.Member{func() gossip.Member {
			m := alive
			m.State, m.Since = gossip.StateDead, t0
			return m
		}()}, check: func(t *testing.T) {
			if n := node("first"); n.Phase != api.PhaseNotReady || n.PhaseReason != "peer stopped answering at "+t0.Format(time.RFC3339) {
				t.Fatalf("first: %s %q", n.Phase, n.PhaseReason)
			}
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			pass(s.members...)
			s.check(t)
			before := r.FSM.Index()
			pass(s.members...)
			if after := r.FSM.Index(); after != before {
				t.Fatalf("a second pass with nothing new wrote %d commands", after-before)
			}
		})
	}
	l.wg.Wait()
	if got := p.joins(); !slices.Contains(got, "10.0.0.9:7946") {
		t.Fatalf("the pool was asked to join %v, not the absent peer's address", got)
	}
}
