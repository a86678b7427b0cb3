package follow

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/testkit/poll"
)

// member is a one-voter Raft group and the feed it serves over HTTP.
type member struct {
	store *raftstore.Store
	feed  *Feed
	srv   *httptest.Server
}

// newMember starts a one-voter group whose log keeps threshold entries
// behind a snapshot, and serves its feed.
func newMember(t *testing.T, threshold uint64) *member {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := raftstore.OpenStore(raftstore.StoreConfig{ID: "m1", DataDir: t.TempDir(), Listener: ln, SnapshotThreshold: threshold}, raftfsm.NewFSM(nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(false) })
	if err := s.BootstrapCluster([]raftstore.Server{{ID: s.ID(), Address: s.Addr(), Voter: true}}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "the member to lead", 30*time.Second, poll.True(s.IsLeader))
	m := &member{store: s, feed: &Feed{Log: s, FSM: s.FSM, Leader: func() string { _, id := s.Leader(); return id }}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+LogPath, m.feed.ServeLog)
	mux.HandleFunc("GET "+StatePath, m.feed.ServeState)
	m.srv = httptest.NewServer(mux)
	t.Cleanup(m.srv.Close)
	return m
}

// write applies n commands (namespaces prefix-0 ...) through the member.
func (m *member) write(t *testing.T, prefix string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		if _, err := m.store.ApplyCommand(ctx, raftfsm.TypeNamespaceCreate, raftfsm.NamespaceCreate{Name: fmt.Sprintf("%s-%d", prefix, i), Time: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
}

// follow runs a follower of sources until the test ends.
func follow(t *testing.T, fsm *raftfsm.FSM, sources ...string) *Follower {
	t.Helper()
	f := &Follower{FSM: fsm, Sources: func() []string { return sources }, Wait: 500 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// same waits until fsm holds exactly the member's state.
func same(t *testing.T, m *member, fsm *raftfsm.FSM) {
	t.Helper()
	poll.For(t, "the follower to hold the member's state", 30*time.Second, func() error {
		want, err := m.store.FSM.Dump()
		if err != nil {
			return err
		}
		got, err := fsm.Dump()
		if err != nil {
			return err
		}
		if fsm.Index() != m.store.FSM.Index() || !bytes.Equal(got, want) {
			return fmt.Errorf("follower at %d, member at %d", fsm.Index(), m.store.FSM.Index())
		}
		return nil
	})
}

func TestFollower_copies_the_state_then_follows_the_log(t *testing.T) {
	m := newMember(t, 0)
	m.write(t, "before", 20)
	fsm := raftfsm.NewFSM(nil)
	f := follow(t, fsm, m.srv.URL)
	same(t, m, fsm)
	m.write(t, "after", 30)
	same(t, m, fsm)
	st := f.Status()
	if st.Copies != 1 || st.Source != m.srv.URL || st.Leader != "m1" {
		t.Fatalf("status %+v: want one copy of the state, from %s, leader m1", st, m.srv.URL)
	}
	if _, ok := fsm.Namespace("after-29"); !ok {
		t.Fatal("the last namespace is not on the follower")
	}
}

// A follower that was away while the member compacted the entries it
// needs copies the state again, and follows on from it.
func TestFollower_entries_compacted_while_away_copy_the_state_again(t *testing.T) {
	m := newMember(t, 8)
	m.write(t, "first", 5)
	fsm := raftfsm.NewFSM(nil)
	ctx, cancel := context.WithCancel(context.Background())
	away := &Follower{FSM: fsm, Sources: func() []string { return []string{m.srv.URL} }, Wait: 500 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); _ = away.Run(ctx) }()
	same(t, m, fsm)
	cancel()
	<-done
	m.write(t, "while-away", 100)
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if _, err := m.store.TakeSnapshot(sctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.store.Entries(fsm.Index()+1, 1, 1); err == nil {
		t.Fatal("the member still has the entries the follower needs: nothing compacted")
	}
	back := follow(t, fsm, m.srv.URL)
	same(t, m, fsm)
	if c := back.Status().Copies; c != 1 {
		t.Fatalf("the follower back copied the state %d times, want once", c)
	}
	m.write(t, "after", 3)
	same(t, m, fsm)
}

// A source that does not answer is left for the next.
func TestFollower_moves_past_a_dead_source(t *testing.T) {
	m := newMember(t, 0)
	m.write(t, "ns", 10)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	fsm := raftfsm.NewFSM(nil)
	f := follow(t, fsm, deadURL, m.srv.URL)
	same(t, m, fsm)
	if s := f.Status().Source; s != m.srv.URL {
		t.Fatalf("following %q, want %q", s, m.srv.URL)
	}
}

func TestFeed_Read_waits_for_the_next_command(t *testing.T) {
	m := newMember(t, 0)
	m.write(t, "ns", 3)
	next := m.store.FSM.Index() + 1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if b, err := m.feed.Read(ctx, next, 0, "m1"); err != nil || len(b.Entries) != 0 || b.Next != next {
		t.Fatalf("a read past the log without a wait: %+v %v, want nothing from %d at once", b, err, next)
	}
	got := make(chan Batch, 1)
	go func() {
		b, err := m.feed.Read(ctx, next, MaxWait, "m1")
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	m.write(t, "later", 1)
	b := <-got
	if len(b.Entries) != 1 || b.Entries[0].Index < next || b.Leader != "m1" {
		t.Fatalf("the waiting read: %+v, want the one command from %d", b, next)
	}
	c, err := raftfsm.Decode(b.Entries[0].Data)
	if err != nil || c.Type != raftfsm.TypeNamespaceCreate {
		t.Fatalf("the entry: %+v %v", c, err)
	}
}

func TestFeed_ServeLog_refuses_a_bad_query(t *testing.T) {
	m := newMember(t, 0)
	for _, q := range []string{"", "?from=x", "?from=1&wait=soon", "?from=1&wait=-1s"} {
		resp, err := http.Get(m.srv.URL + LogPath + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: %d, want 400", q, resp.StatusCode)
		}
	}
}

// A follower learns of a new leader without waiting for a command: a read
// that names another leader than the member's returns at once, and one
// that waits returns when the member's leader changes.
func TestFeed_Read_returns_when_the_leader_changes(t *testing.T) {
	m := newMember(t, 0)
	m.write(t, "ns", 1)
	var mu sync.Mutex
	leader, changed := "old", make(chan struct{})
	m.feed.Leader = func() string { mu.Lock(); defer mu.Unlock(); return leader }
	m.feed.LeaderChanged = func() <-chan struct{} { mu.Lock(); defer mu.Unlock(); return changed }
	next := m.store.FSM.Index() + 1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if b, err := m.feed.Read(ctx, next, MaxWait, "someone-else"); err != nil || b.Leader != "old" {
		t.Fatalf("a read naming another leader: %+v %v", b, err)
	}
	got := make(chan Batch, 1)
	go func() {
		b, err := m.feed.Read(ctx, next, MaxWait, "old")
		if err != nil {
			t.Error(err)
		}
		got <- b
	}()
	// the read waits (no command comes); the leader changes
	mu.Lock()
	leader = "new"
	close(changed)
	changed = make(chan struct{})
	mu.Unlock()
	if b := <-got; b.Leader != "new" || len(b.Entries) != 0 {
		t.Fatalf("the waiting read after the leader changed: %+v", b)
	}
}
