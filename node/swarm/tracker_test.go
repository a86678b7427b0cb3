package swarm

import (
	"slices"
	"testing"
	"time"
)

func bitsOf(n int, set ...int) Bits {
	b := NewBits(n)
	for _, i := range set {
		b.Set(i)
	}
	return b
}

func TestTracker_Announce(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		node    string
		a       Announce
		at      time.Duration
		granted []int
		peers   []string
		bad     bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"a claim is granted once", []step{
			{node: "a", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{0, 1}}, granted: []int{0, 1}},
			{node: "b", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{1, 2}}, granted: []int{2}, peers: []string{}},
		}},
		{"a chunk a peer has is not granted", []step{
			{node: "a", a: Announce{Chunks: 4, Have: bitsOf(4, 3)}},
			{node: "b", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{3}}, peers: []string{"a"}},
		}},
		{"a shunned peer stands in no way", []step{
			{node: "a", a: Announce{Chunks: 4, Have: bitsOf(4, 3), Claim: []int{2}}, granted: []int{2}},
			{node: "b", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{2, 3}, Shun: []string{"a"}}, granted: []int{2, 3}, peers: []string{"a"}},
		}},
		{"a silent peer's claims lapse", []step{
			{node: "a", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{0}}, granted: []int{0}},
			{node: "b", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{0}}, at: PeerTTL + time.Second, granted: []int{0}},
		}},
		{"a leaving peer's claims lapse", []step{
			{node: "a", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{0}}, granted: []int{0}},
			{node: "a", a: Announce{Chunks: 4, Have: bitsOf(4), Leave: true}},
			{node: "b", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{0}}, granted: []int{0}},
		}},
		{"no chunks", []step{{node: "a", a: Announce{Chunks: 0}, bad: true}}},
		{"a bitmap of the wrong length", []step{{node: "a", a: Announce{Chunks: 9, Have: bitsOf(8)}, bad: true}}},
		{"a claim out of range", []step{{node: "a", a: Announce{Chunks: 4, Have: bitsOf(4), Claim: []int{4}}, bad: true}}},
		{"too many claims", []step{{node: "a", a: Announce{Chunks: 1000, Have: bitsOf(1000), Claim: make([]int, MaxClaims+1)}, bad: true}}},
		{"another chunk count for the plan", []step{
			{node: "a", a: Announce{Chunks: 4, Have: bitsOf(4)}},
			{node: "b", a: Announce{Chunks: 8, Have: bitsOf(8)}, bad: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker()
			for i, s := range tc.steps {
				r, err := tr.Announce("k", s.node, s.a, t0.Add(s.at))
				if (err != nil) != s.bad {
					t.Fatalf("step %d: %v", i, err)
				}
				if !slices.Equal(r.Granted, s.granted) {
					t.Fatalf("step %d: granted %v, want %v", i, r.Granted, s.granted)
				}
				var peers []string
				for _, p := range r.Peers {
					peers = append(peers, p.Node)
				}
				if s.peers != nil && !slices.Equal(peers, s.peers) && !(len(peers) == 0 && len(s.peers) == 0) {
					t.Fatalf("step %d: peers %v, want %v", i, peers, s.peers)
				}
			}
		})
	}
}
