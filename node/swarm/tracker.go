package swarm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// Tracker bounds and timings.
const (
	// PeerTTL is how long a fetching peer stays listed after its last word.
	PeerTTL = 5 * time.Second
	// ClaimTTL is how long a claim on a chunk holds while its peer lives:
	// after it, another peer may read the chunk from the origin too.
	ClaimTTL = 2 * time.Minute
	// MaxClaims bounds the chunks one announcement claims.
	MaxClaims = 64
	// MaxListed bounds the other peers an answer lists.
	MaxListed = 64
	// MaxSwarms bounds the plans a tracker follows at once.
	MaxSwarms = 1024
)

// ErrTrackerFull is returned when the tracker follows MaxSwarms plans
// with live peers.
var ErrTrackerFull = errors.New("the tracker follows too many blobs at once")

// Announce is what a fetching peer tells the tracker: which chunks it has,
// which it wants to read from the origin, or that it leaves.
type Announce struct {
	Chunks int   `json:"chunks"`
	Have   Bits  `json:"have"`
	Claim  []int `json:"claim,omitempty"`
	// Shun names the peers this one no longer asks (they served a bad
	// chunk): what they have or claim does not stand in its way.
	Shun  []string `json:"shun,omitempty"`
	Leave bool     `json:"leave,omitempty"`
}

// Reply is what the tracker answers: the other peers' chunks, and the
// claims granted (the asker reads those chunks from the origin).
type Reply struct {
	Peers   []PeerHave `json:"peers"`
	Granted []int      `json:"granted,omitempty"`
}

// PeerHave is another peer fetching the same plan and what it has.
type PeerHave struct {
	Node string `json:"node"`
	Have Bits   `json:"have"`
}

// Tracker keeps, in memory, who fetches which plan and what each has. The
// leader's serves the cluster; a new leader's starts empty and fills
// within one round of announcements.
type Tracker struct {
	mu     sync.Mutex
	swarms map[string]*swarmState
}

type swarmState struct {
	chunks int
	peers  map[string]*peerState
	claims map[int]claim
}

type peerState struct {
	have Bits
	seen time.Time
}

type claim struct {
	node string
	at   time.Time
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker { return &Tracker{swarms: map[string]*swarmState{}} }

// Announce records what node says of plan key and answers it.
func (t *Tracker) Announce(key, node string, a Announce, now time.Time) (Reply, error) {
	if a.Chunks <= 0 || a.Chunks > MaxChunks {
		return Reply{}, fmt.Errorf("chunks: %d is not between 1 and %d", a.Chunks, MaxChunks)
	}
	if len(a.Have) != (a.Chunks+7)/8 {
		return Reply{}, fmt.Errorf("have: %d bytes for %d chunks, want %d", len(a.Have), a.Chunks, (a.Chunks+7)/8)
	}
	if len(a.Claim) > MaxClaims {
		return Reply{}, fmt.Errorf("claim: %d chunks, at most %d", len(a.Claim), MaxClaims)
	}
	if len(a.Shun) > MaxListed {
		return Reply{}, fmt.Errorf("shun: %d peers, at most %d", len(a.Shun), MaxListed)
	}
	for _, i := range a.Claim {
		if i < 0 || i >= a.Chunks {
			return Reply{}, fmt.Errorf("claim: chunk %d of %d", i, a.Chunks)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.swarms[key]
	if ok && s.chunks != a.Chunks {
		return Reply{}, fmt.Errorf("chunks: %d, but plan %s has %d", a.Chunks, key, s.chunks)
	}
	if !ok {
		if a.Leave {
			return Reply{}, nil
		}
		if len(t.swarms) >= MaxSwarms {
			t.expire(now)
		}
		if len(t.swarms) >= MaxSwarms {
			return Reply{}, ErrTrackerFull
		}
		s = &swarmState{chunks: a.Chunks, peers: map[string]*peerState{}, claims: map[int]claim{}}
		t.swarms[key] = s
	}
	s.expire(now)
	if a.Leave {
		s.leave(node)
		if len(s.peers) == 0 {
			delete(t.swarms, key)
		}
		return Reply{}, nil
	}
	s.peers[node] = &peerState{have: append(Bits(nil), a.Have...), seen: now}
	var r Reply
	for _, i := range a.Claim {
		if s.grant(node, i, a.Shun, now) {
			r.Granted = append(r.Granted, i)
		}
	}
	for name, p := range s.peers {
		if name != node && p.have.Count() > 0 {
			r.Peers = append(r.Peers, PeerHave{Node: name, Have: p.have})
		}
	}
	if len(r.Peers) > MaxListed {
		rand.Shuffle(len(r.Peers), func(i, j int) { r.Peers[i], r.Peers[j] = r.Peers[j], r.Peers[i] })
		r.Peers = r.Peers[:MaxListed]
	}
	sort.Slice(r.Peers, func(i, j int) bool { return r.Peers[i].Node < r.Peers[j].Node })
	return r, nil
}

// grant gives node chunk i to read from the origin unless a live peer it
// does not shun has it, or claimed it and may still be reading it.
func (s *swarmState) grant(node string, i int, shun []string, now time.Time) bool {
	if s.peers[node].have.Has(i) {
		return false
	}
	for name, p := range s.peers {
		if name != node && p.have.Has(i) && !slices.Contains(shun, name) {
			return false
		}
	}
	if c, ok := s.claims[i]; ok && c.node != node && now.Sub(c.at) < ClaimTTL && !slices.Contains(shun, c.node) {
		return false
	}
	s.claims[i] = claim{node: node, at: now}
	return true
}

// leave forgets node and its claims.
func (s *swarmState) leave(node string) {
	delete(s.peers, node)
	for i, c := range s.claims {
		if c.node == node {
			delete(s.claims, i)
		}
	}
}

// expire forgets the peers not heard of for PeerTTL, and their claims.
func (s *swarmState) expire(now time.Time) {
	for name, p := range s.peers {
		if now.Sub(p.seen) > PeerTTL {
			s.leave(name)
		}
	}
}

// expire forgets the plans nobody fetches any more.
func (t *Tracker) expire(now time.Time) {
	for key, s := range t.swarms {
		s.expire(now)
		if len(s.peers) == 0 {
			delete(t.swarms, key)
		}
	}
}
