package peerbook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/testkit/poll"
)

var errRefused = errors.New("refused")

// fakePool is a gossip pool whose joins fail a given number of times.
type fakePool struct {
	mu      sync.Mutex
	addr    string
	fails   int
	joins   [][]string
	members []gossip.Member
	reads   int
	changed chan struct{}
}

func newPool(addr string, fails int) *fakePool {
	return &fakePool{addr: addr, fails: fails, changed: make(chan struct{})}
}

func (f *fakePool) Addr() string { return f.addr }

func (f *fakePool) Join(_ context.Context, addrs []string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.joins = append(f.joins, addrs)
	if len(f.joins) <= f.fails {
		return 0, fmt.Errorf("attempt %d: %w", len(f.joins), errRefused)
	}
	return len(addrs), nil
}

func (f *fakePool) Members() []gossip.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return slices.Clone(f.members)
}

func (f *fakePool) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakePool) set(members ...gossip.Member) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.members = members
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakePool) memberReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *fakePool) attempts() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.joins)
}

func alive(name, addr string) gossip.Member {
	return gossip.Member{Name: name, GossipAddr: addr, State: gossip.StateAlive}
}

func TestBook_save_and_load(t *testing.T) {
	dir := t.TempDir()
	b := New(Config{Name: "a", DataDir: dir})
	if got := b.Load(); got != nil {
		t.Fatalf("nothing saved, loaded %v", got)
	}
	if err := b.Save([]string{"10.0.0.2:7946", "10.0.0.3:7946"}); err != nil {
		t.Fatal(err)
	}
	if got := New(Config{Name: "a", DataDir: dir}).Load(); !slices.Equal(got, []string{"10.0.0.2:7946", "10.0.0.3:7946"}) {
		t.Fatalf("loaded %v", got)
	}
	if err := os.WriteFile(filepath.Join(dir, File), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := b.Load(); got != nil {
		t.Fatalf("an unreadable file loaded as %v", got)
	}
}

func TestBook_addrs(t *testing.T) {
	dir := t.TempDir()
	b := New(Config{Name: "a", DataDir: dir, Join: []string{"j:1"}})
	if err := b.Save([]string{"r:1", "j:1"}); err != nil {
		t.Fatal(err)
	}
	got := b.Addrs([]gossip.Member{alive("a", "self:1"), alive("b", "r:1"), alive("c", "g:1")})
	if want := []string{"j:1", "r:1", "g:1"}; !slices.Equal(got, want) {
		t.Fatalf("addrs %v, want %v (each once, never this peer's own)", got, want)
	}
}

func TestBook_join(t *testing.T) {
	cases := []struct {
		name        string
		join, seeds []string
		remembered  []string
		fails       int
		timeout     time.Duration
		wantErr     error
		wantJoins   int
		wantAddrs   []string
	}{
		{name: "first_answer", join: []string{"j:1"}, seeds: []string{"s:1", "j:1"}, remembered: []string{"r:1", "own:1"},
			wantJoins: 1, wantAddrs: []string{"j:1", "s:1", "r:1"}},
		{name: "after_two_refusals", join: []string{"j:1"}, fails: 2, timeout: time.Minute, wantJoins: 3, wantAddrs: []string{"j:1"}},
		{name: "nobody_to_ask", remembered: []string{"own:1"}, wantJoins: 0},
		{name: "timeout", join: []string{"j:1"}, fails: 1 << 20, timeout: 300 * time.Millisecond, wantErr: ErrJoinTimeout, wantJoins: 3, wantAddrs: []string{"j:1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := New(Config{Name: "a", DataDir: t.TempDir(), Join: c.join, Seeds: c.seeds, Timeout: c.timeout})
			if c.remembered != nil {
				if err := b.Save(c.remembered); err != nil {
					t.Fatal(err)
				}
			}
			pool := newPool("own:1", c.fails)
			err := b.Join(context.Background(), pool)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("join: %v, want %v", err, c.wantErr)
			}
			if c.wantErr != nil && !errors.Is(err, errRefused) {
				t.Fatalf("the error %q does not carry the last refusal", err)
			}
			joins := pool.attempts()
			if len(joins) != c.wantJoins {
				t.Fatalf("%d attempts, want %d", len(joins), c.wantJoins)
			}
			for _, j := range joins {
				if !slices.Equal(j, c.wantAddrs) {
					t.Fatalf("joined through %v, want %v", j, c.wantAddrs)
				}
			}
		})
	}
}

func TestBook_join_cancelled(t *testing.T) {
	b := New(Config{Name: "a", DataDir: t.TempDir(), Join: []string{"j:1"}, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	pool := newPool("own:1", 1<<20)
	done := make(chan error, 1)
	go func() { done <- b.Join(ctx, pool) }()
	poll.For(t, "a first attempt", 10*time.Second, poll.True(func() bool { return len(pool.attempts()) > 0 }))
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a cancelled join: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the join did not end with its context")
	}
}

func TestBook_remember(t *testing.T) {
	dir := t.TempDir()
	b := New(Config{Name: "a", DataDir: dir})
	pool := newPool("own:1", 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Remember(ctx, pool) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)

	saved := func(want ...string) {
		t.Helper()
		poll.For(t, fmt.Sprintf("peers file %v", want), 10*time.Second, func() error {
			if got := b.Load(); !slices.Equal(got, want) {
				return fmt.Errorf("file holds %v", got)
			}
			return nil
		})
	}
	pool.set(alive("a", "own:1"), alive("b", "b:1"))
	saved("b:1")
	dead := alive("b", "b:1")
	dead.State = gossip.StateDead
	pool.set(alive("a", "own:1"), dead, alive("c", "c:1"))
	saved("c:1")
	// With no live peer left the file keeps the last ones, for the next
	// start: once the loop has read the members it decides, and it ends
	// only after.
	reads := pool.memberReads()
	pool.set(alive("a", "own:1"))
	poll.For(t, "the members read again", 10*time.Second, poll.True(func() bool { return pool.memberReads() > reads }))
	stop()
	if got := b.Load(); !slices.Equal(got, []string{"c:1"}) {
		t.Fatalf("with no live peer the file holds %v", got)
	}
}
