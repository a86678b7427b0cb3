package standing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/testkit/poll"
)

var errNoAnswer = errors.New("connection refused")

// asker answers standing questions by address and records them.
type asker struct {
	mu      sync.Mutex
	answers map[string]error
	asked   []string
}

func (a *asker) ask(_ context.Context, addr string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, addr)
	return a.answers[addr]
}

func (a *asker) askedSoFar() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.asked)
}

func TestKeeper_check(t *testing.T) {
	refused := fmt.Errorf("%w: this peer was removed", fabric.ErrRefused)
	other := fmt.Errorf("%w: another CA", fabric.ErrOtherCluster)
	for _, tc := range []struct {
		name    string
		answers map[string]error
		refused bool
		asked   []string
	}{
		{"the first peer welcomes it", map[string]error{"a": nil, "b": refused}, false, []string{"a"}},
		{"the first peer refuses it", map[string]error{"a": refused, "b": nil}, true, []string{"a"}},
		{"an address of another cluster is passed over", map[string]error{"a": other, "b": nil}, false, []string{"a", "b"}},
		{"a peer that does not answer is passed over", map[string]error{"a": errNoAnswer, "b": refused}, true, []string{"a", "b"}},
		{"no peer answers: it may come back", map[string]error{"a": errNoAnswer, "b": errNoAnswer}, false, []string{"a", "b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &asker{answers: tc.answers}
			k := New(Config{Addrs: func() []string { return []string{"a", "b"} }, Ask: a.ask})
			err := k.Check(context.Background())
			if errors.Is(err, fabric.ErrRefused) != tc.refused || !tc.refused && err != nil {
				t.Fatalf("Check: %v (refused: want %v)", err, tc.refused)
			}
			if got := a.askedSoFar(); !slices.Equal(got, tc.asked) {
				t.Fatalf("asked %v, want %v", got, tc.asked)
			}
		})
	}
}

// While it knows a leader a running peer asks nothing; once it knows none
// it asks, and a refusal stops it.
func TestKeeper_run_stops_a_removed_peer(t *testing.T) {
	a := &asker{answers: map[string]error{"a": fmt.Errorf("%w: removed", fabric.ErrRefused)}}
	var mu sync.Mutex
	leaderChecks, leaderKnown := 0, true
	removed := make(chan error, 1)
	k := New(Config{
		Addrs: func() []string { return []string{"a"} }, Ask: a.ask, Every: time.Millisecond,
		LeaderKnown: func() bool {
			mu.Lock()
			defer mu.Unlock()
			leaderChecks++
			return leaderKnown
		},
		Removed: func(err error) { removed <- err },
	})
	done := make(chan struct{})
	go func() { k.Run(context.Background()); close(done) }()
	poll.For(t, "three ticks with a leader", 10*time.Second, poll.True(func() bool { mu.Lock(); defer mu.Unlock(); return leaderChecks >= 3 }))
	if asked := a.askedSoFar(); len(asked) != 0 {
		t.Fatalf("asked %v while a leader was known", asked)
	}
	mu.Lock()
	leaderKnown = false
	mu.Unlock()
	select {
	case err := <-removed:
		if !errors.Is(err, fabric.ErrRefused) {
			t.Fatalf("removed with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the refused peer was not stopped within 10 s")
	}
	<-done
}

// trustServer answers a peer's trust set.
func trustServer(t *testing.T, set api.PeerTrust) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != api.TrustPath {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestKeeper_refresh_trust(t *testing.T) {
	removedAt := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	newer := api.PeerTrust{Index: 9, Members: map[string]string{"me": "k1", "p2": "k2", "p3": "k3"},
		Removed: map[string]api.PeerRemoval{"k0": {Name: "p0", At: removedAt, By: "admin"}}}
	older := api.PeerTrust{Index: 3, Members: map[string]string{"me": "k1"}}
	for _, tc := range []struct {
		name   string
		known  bool // whether p2's address is known
		asked  bool
		taken  bool
		answer api.PeerTrust
	}{
		{"a newer set is taken", true, true, true, newer},
		{"an older set is not", true, true, false, older},
		{"no peer's address known", false, false, false, newer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			trust, err := fabric.OpenTrust(filepath.Join(t.TempDir(), "trust.json"))
			if err != nil {
				t.Fatal(err)
			}
			have := fabric.TrustSet{Index: 5, Members: map[string]string{"me": "k1", "p2": "k2"}}
			if _, err := trust.Update(have); err != nil {
				t.Fatal(err)
			}
			url := trustServer(t, tc.answer)
			k := New(Config{Name: "me", Trust: trust, HTTP: http.DefaultClient, PeerURL: func(name string) string {
				if name == "p2" && tc.known {
					return url
				}
				return ""
			}})
			if asked := k.refreshTrust(context.Background()); asked != tc.asked {
				t.Fatalf("refreshTrust asked: %v, want %v", asked, tc.asked)
			}
			got := trust.Set()
			if !tc.taken {
				if got.Index != have.Index || !maps.Equal(got.Members, have.Members) {
					t.Fatalf("the trust set became %+v", got)
				}
				return
			}
			if got.Index != 9 || !maps.Equal(got.Members, newer.Members) || got.Removed["k0"].Name != "p0" || !got.Removed["k0"].At.Equal(removedAt) {
				t.Fatalf("the trust set is %+v, want the peer's %+v", got, newer)
			}
		})
	}
}

// RefreshTrustSoon has the running keeper refresh.
func TestKeeper_refresh_soon(t *testing.T) {
	trust, err := fabric.OpenTrust(filepath.Join(t.TempDir(), "trust.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := trust.Update(fabric.TrustSet{Index: 5, Members: map[string]string{"me": "k1", "p2": "k2"}}); err != nil {
		t.Fatal(err)
	}
	url := trustServer(t, api.PeerTrust{Index: 7, Members: map[string]string{"me": "k1", "p2": "k2", "p3": "k3"}})
	k := New(Config{Name: "me", Trust: trust, HTTP: http.DefaultClient, PeerURL: func(string) string { return url },
		LeaderKnown: func() bool { return true }, Every: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { k.Run(ctx); close(done) }()
	k.RefreshTrustSoon()
	poll.For(t, "the newer trust set taken", 10*time.Second, poll.True(func() bool { return trust.Index() == 7 }))
	cancel()
	<-done
}
