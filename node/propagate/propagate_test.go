package propagate

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
)

// peer is a stand-in for a peer's applied-index route: its index is what
// the test sets, and it counts how often it was asked.
type peer struct {
	srv   *httptest.Server
	index atomic.Uint64
	asked atomic.Int64
	// from the raiseAt-th question on the peer has applied raiseTo (0: never)
	raiseAt int64
	raiseTo uint64
}

func newPeer(t *testing.T, index uint64, raiseAt int64, raiseTo uint64) *peer {
	t.Helper()
	p := &peer{raiseAt: raiseAt, raiseTo: raiseTo}
	p.index.Store(index)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n := p.asked.Add(1); p.raiseAt > 0 && n >= p.raiseAt {
			p.index.Store(p.raiseTo)
		}
		if r.URL.Path != api.AppliedIndexPath {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(api.CommitIndex{Index: p.index.Load()})
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func TestWaiter_WaitPeersApplied(t *testing.T) {
	tests := []struct {
		name string
		// each peer's applied index by name ("self" is this peer)
		index   map[string]uint64
		states  map[string]gossip.State
		removed []string
		noURL   []string
		// raise names peers that apply the write while they are waited for
		raise       []string
		wantLagging []string
		wantAsked   []string
	}{
		{name: "all_applied", index: map[string]uint64{"self": 0, "b": 10, "c": 12},
			wantAsked: []string{"b", "c"}},
		{name: "one_behind", index: map[string]uint64{"self": 0, "b": 10, "c": 3},
			wantLagging: []string{"c"}, wantAsked: []string{"b", "c"}},
		{name: "catches_up_while_waited_for", index: map[string]uint64{"self": 0, "b": 10, "c": 3},
			raise: []string{"c"}, wantAsked: []string{"b", "c"}},
		{name: "dead_removed_and_unknown_are_not_waited_for",
			index:  map[string]uint64{"self": 0, "b": 1, "c": 1, "d": 1, "e": 10},
			states: map[string]gossip.State{"b": gossip.StateDead}, removed: []string{"c"}, noURL: []string{"d"},
			wantAsked: []string{"e"}},
		{name: "sorted_lagging", index: map[string]uint64{"self": 0, "z": 1, "a": 1, "m": 10},
			wantLagging: []string{"a", "z"}, wantAsked: []string{"a", "m", "z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const write = 10
			peers := map[string]*peer{}
			var members []gossip.Member
			for name, idx := range tt.index {
				var raiseAt int64
				if slices.Contains(tt.raise, name) {
					raiseAt = 3 // asked twice before it has the write
				}
				peers[name] = newPeer(t, idx, raiseAt, write)
				st := gossip.StateAlive
				if s, ok := tt.states[name]; ok {
					st = s
				}
				members = append(members, gossip.Member{Name: name, State: st})
			}
			w := New(Config{
				Self:      "self",
				Members:   func() []gossip.Member { return members },
				InCluster: func(name string) bool { return !slices.Contains(tt.removed, name) },
				URL: func(name string) string {
					if slices.Contains(tt.noURL, name) {
						return ""
					}
					return peers[name].srv.URL
				},
				HTTP:    &http.Client{},
				Timeout: 300 * time.Millisecond,
			})
			got := w.WaitPeersApplied(context.Background(), write)
			if !slices.Equal(got, tt.wantLagging) {
				t.Errorf("lagging = %v, want %v", got, tt.wantLagging)
			}
			var asked []string
			for name, p := range peers {
				if p.asked.Load() > 0 {
					asked = append(asked, name)
				}
			}
			slices.Sort(asked)
			if !slices.Equal(asked, tt.wantAsked) {
				t.Errorf("asked %v, want %v", asked, tt.wantAsked)
			}
		})
	}
}

func TestWaiter_context_ends_the_wait(t *testing.T) {
	p := newPeer(t, 1, 0, 0)
	w := New(Config{
		Self:      "self",
		Members:   func() []gossip.Member { return []gossip.Member{{Name: "b", State: gossip.StateAlive}} },
		InCluster: func(string) bool { return true },
		URL:       func(string) string { return p.srv.URL },
		HTTP:      &http.Client{},
		Timeout:   time.Hour,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan []string, 1)
	go func() { done <- w.WaitPeersApplied(ctx, 5) }()
	select {
	case got := <-done:
		if !slices.Equal(got, []string{"b"}) {
			t.Fatalf("lagging = %v, want [b]", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait outlived its context by 10 s")
	}
}
