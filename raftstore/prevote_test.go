package raftstore

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// cutGate refuses the addresses cut, as a network cut would.
type cutGate struct {
	mu  sync.Mutex
	cut map[string]bool
}

func (g *cutGate) Allowed(addr string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.cut[addr]
}

func (g *cutGate) cutOff(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cut[addr] = true
}

// voters starts three stores of one cluster on loopback, store i with
// timing[i] and a gate of its own, and returns them with their gates once
// one leads and every store knows it.
func voters(t *testing.T, timing [3]Timing) ([3]*Store, [3]*cutGate) {
	t.Helper()
	var (
		stores  [3]*Store
		gates   [3]*cutGate
		servers []Server
	)
	for i := range stores {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gates[i] = &cutGate{cut: map[string]bool{}}
		s, err := OpenStore(StoreConfig{ID: fmt.Sprintf("v%d", i), DataDir: t.TempDir(), Listener: ln, Gate: gates[i],
			Timing: timing[i]}, raftfsm.NewFSM(nil))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if s.raft.State() != raft.Shutdown { // a test may have closed it
				_ = s.Close(false)
			}
		})
		stores[i] = s
		servers = append(servers, Server{ID: s.ID(), Address: s.Addr(), Voter: true})
	}
	for _, s := range stores {
		if err := s.BootstrapCluster(servers); err != nil {
			t.Fatal(err)
		}
	}
	poll.For(t, "a leader every store knows", 30*time.Second, func() error {
		for _, s := range stores {
			if addr, _ := s.Leader(); addr == "" {
				return fmt.Errorf("%s knows no leader", s.ID())
			}
		}
		return nil
	})
	return stores, gates
}

func leaderOf(stores []*Store) *Store {
	for _, s := range stores {
		if s.IsLeader() {
			return s
		}
	}
	return nil
}

var (
	// prodTiming is the production timeouts.
	prodTiming = Timing{Heartbeat: DefaultHeartbeat, Election: DefaultElection, LeaderLease: DefaultLeaderLease}
	// deafTiming looks at the leader only after 30 s to a minute of
	// silence on its own.
	deafTiming = Timing{Heartbeat: 30 * time.Second, Election: 30 * time.Second, LeaderLease: DefaultLeaderLease}
)

// When the leader dies, a follower whose own timer would look much later
// looks as soon as the other follower asks it for a pre-vote, and the two
// elect a leader; its heartbeat timeout is back afterwards. Without the
// look, the deaf follower refuses every pre-vote for 30 s or more while it
// still knows the dead leader, and no leader is elected.
func TestStore_asked_for_a_prevote_looks_at_the_leader_at_once(t *testing.T) {
	stores, _ := voters(t, [3]Timing{prodTiming, prodTiming, deafTiming})
	deaf := stores[2]
	old := leaderOf(stores[:2])
	if old == nil {
		t.Fatal("the deaf store leads, though its own timer looks only after 30 s")
	}
	other := stores[0]
	if other == old {
		other = stores[1]
	}
	if err := old.Close(false); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "a leader elected without the dead one", 10*time.Second, func() error {
		if l := leaderOf([]*Store{other, deaf}); l == nil {
			return fmt.Errorf("no leader")
		}
		return nil
	})
	poll.For(t, "the deaf store's heartbeat timeout back", 5*time.Second, func() error {
		if hb := deaf.raft.ReloadableConfig().HeartbeatTimeout; hb != deafTiming.Heartbeat {
			return fmt.Errorf("heartbeat timeout %s", hb)
		}
		return nil
	})
}

// A follower cut off from the leader alone asks the others for pre-votes
// in vain: a follower that still hears the leader does not look, and the
// leader stays.
func TestStore_a_follower_that_hears_the_leader_does_not_look(t *testing.T) {
	stores, gates := voters(t, [3]Timing{prodTiming, prodTiming, prodTiming})
	leader := leaderOf(stores[:])
	var cut, hearing *Store
	for _, s := range stores {
		switch {
		case s == leader:
		case cut == nil:
			cut = s
		default:
			hearing = s
		}
	}
	term := hearing.raft.CurrentTerm()
	asked := make(chan raft.Observation, 16)
	obs := raft.NewObserver(asked, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.RequestPreVoteRequest)
		return ok
	})
	hearing.raft.RegisterObserver(obs)
	defer hearing.raft.DeregisterObserver(obs)
	for i, s := range stores {
		if s == leader {
			gates[i].cutOff(cut.Addr()) // the leader's heartbeats no longer reach it
		}
	}
	for n := range 3 {
		select {
		case <-asked:
		case <-time.After(20 * time.Second):
			t.Fatalf("the cut-off follower asked for %d pre-votes in 20 s", n)
		}
	}
	if !leader.IsLeader() {
		t.Fatal("the leader lost its leadership")
	}
	if got, _ := hearing.Leader(); got != leader.Addr() || hearing.raft.CurrentTerm() != term {
		t.Fatalf("the follower that hears the leader follows %q in term %d, was %q in term %d", got, hearing.raft.CurrentTerm(), leader.Addr(), term)
	}
	if hb := hearing.raft.ReloadableConfig().HeartbeatTimeout; hb != DefaultHeartbeat {
		t.Fatalf("heartbeat timeout %s", hb)
	}
}
