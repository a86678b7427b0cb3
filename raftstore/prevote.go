package raftstore

import (
	"math/rand/v2"
	"time"

	"github.com/hashicorp/raft"
)

// A voter asked for a pre-vote looks at its leader at once.
//
// A follower whose heartbeat timer finds the leader silent asks the other
// voters for a pre-vote. Raft refuses it on a voter that still knows a
// leader, so the election waits for that voter's own timer, which looks at
// a random time between one heartbeat timeout and two after the last look:
// when a leader dies, the first follower to notice waits for the last one.
//
// So a follower asked for a pre-vote looks at once when it has not heard
// from the leader for a leader lease itself. With three voters, both
// followers silent for a lease means the leader has heard no quorum for
// that long and steps down by its own rule anyway. With more voters, those
// still hearing the leader refuse the pre-vote, and it is not disturbed.
// Only when and how soon an election starts changes; what Raft decides
// does not.
//
// With more than three voters, the followers asked at once would all
// stand at once and split the vote; each waits a random part of a lease
// before it looks, so that one of them stands first with the others'
// pre-votes to win.
//
// Raft has no call that looks now. Lowering the heartbeat timeout does it:
// on a follower, raft's ReloadConfig makes the heartbeat timer fire at
// once, and the check uses the new timeout. The timeout is put back as soon
// as the follower has forgotten the leader (it stands for election), or
// after a lease if it heard from the leader again meanwhile.

// watchPreVotes registers an observer of the pre-vote requests this peer
// receives and looks at the leader for each, one at a time, until the
// observer's channel closes.
func (s *Store) watchPreVotes(lease time.Duration) {
	s.preVoteCh = make(chan raft.Observation, 4)
	s.preVoteObs = raft.NewObserver(s.preVoteCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.RequestPreVoteRequest)
		return ok
	})
	s.raft.RegisterObserver(s.preVoteObs)
	go func() {
		for o := range s.preVoteCh {
			req, _ := o.Data.(raft.RequestPreVoteRequest)
			s.lookAtLeader(raft.ServerAddress(req.RPCHeader.Addr), lease)
		}
	}()
}

// lookAtLeader makes this follower check its leader now when it has not
// heard from it for a lease, candidate aside.
func (s *Store) lookAtLeader(candidate raft.ServerAddress, lease time.Duration) {
	if s.raft.State() != raft.Follower {
		return
	}
	if s.voters() > 3 {
		t := time.NewTimer(rand.N(lease))
		<-t.C
		if s.raft.State() != raft.Follower {
			return
		}
	}
	leader, _ := s.raft.LeaderWithID()
	if leader == "" || leader == candidate {
		return // raft grants it or not on its own
	}
	silent := time.Since(s.raft.LastContact())
	if silent < lease {
		return // the leader is alive to this follower: the candidate cut off alone
	}
	rc := s.raft.ReloadableConfig()
	normal := rc.HeartbeatTimeout
	if lease >= normal {
		return // nothing sooner to look with
	}
	changed := s.LeaderChanged()
	rc.HeartbeatTimeout = lease
	if err := s.raft.ReloadConfig(rc); err != nil {
		s.log.Warn("look at the leader when asked for a pre-vote", "err", err)
		return
	}
	s.log.Info("asked for a pre-vote without word from the leader for a lease: looking now",
		"candidate", string(candidate), "leader", string(leader), "silent", silent.Round(time.Millisecond))
	t := time.NewTimer(lease)
	select {
	case <-changed:
	case <-t.C:
	}
	t.Stop()
	rc.HeartbeatTimeout = normal
	if err := s.raft.ReloadConfig(rc); err != nil {
		s.log.Error("put the heartbeat timeout back", "want", normal, "err", err)
	}
}

// voters counts the voters of the newest configuration this peer knows.
func (s *Store) voters() int {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	n := 0
	for _, sv := range f.Configuration().Servers {
		if sv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}
