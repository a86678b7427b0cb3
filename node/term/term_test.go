package term

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/poll"
)

var errBarrier = errors.New("barrier refused")

// fakeRaft is a Raft whose leadership the test sets and whose barrier
// fails a given number of times.
type fakeRaft struct {
	leaderCh chan bool

	mu           sync.Mutex
	leader       bool
	changed      chan struct{}
	barrierFails int
	barriers     int
}

func newRaft(barrierFails int) *fakeRaft {
	return &fakeRaft{leaderCh: make(chan bool), changed: make(chan struct{}), barrierFails: barrierFails}
}

func (f *fakeRaft) LeaderCh() <-chan bool { return f.leaderCh }

func (f *fakeRaft) LeaderChanged() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changed
}

func (f *fakeRaft) IsLeader() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leader
}

func (f *fakeRaft) Barrier(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.barriers++
	if f.barriers <= f.barrierFails {
		return errBarrier
	}
	return nil
}

func (f *fakeRaft) setLeader(b bool) {
	f.mu.Lock()
	f.leader = b
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	f.leaderCh <- b
}

func (f *fakeRaft) barrierCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.barriers
}

// work records the terms' work: how many began, how many ended.
type work struct {
	mu           sync.Mutex
	began, ended int
	readies      int
}

func (w *work) run(ctx context.Context, _ time.Time) {
	w.mu.Lock()
	w.began++
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	w.ended++
	w.mu.Unlock()
}

func (w *work) ready() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.readies++
}

func (w *work) counts() (began, ended, readies int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.began, w.ended, w.readies
}

func start(t *testing.T, raft *fakeRaft) (*Terms, *work, context.CancelFunc, chan struct{}) {
	t.Helper()
	w := &work{}
	terms := New(Config{Raft: raft, Work: w.run, Ready: w.ready, Retry: time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); terms.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return terms, w, cancel, done
}

func counted(t *testing.T, w *work, began, ended, readies int) {
	t.Helper()
	poll.For(t, "the terms' work", 10*time.Second, poll.True(func() bool {
		b, e, r := w.counts()
		return b == began && e == ended && r == readies
	}))
}

func TestTerms_work_for_each_term(t *testing.T) {
	raft := newRaft(0)
	terms, w, _, _ := start(t, raft)
	ctx := context.Background()
	if err := terms.WaitReady(ctx); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a follower's WaitReady: %v", err)
	}
	raft.setLeader(true)
	counted(t, w, 1, 0, 1)
	if err := terms.WaitReady(ctx); err != nil {
		t.Fatalf("the leader's WaitReady: %v", err)
	}
	raft.setLeader(false)
	counted(t, w, 1, 1, 1) // the term's work stopped with it
	if err := terms.WaitReady(ctx); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("a former leader's WaitReady: %v", err)
	}
	raft.setLeader(true)
	counted(t, w, 2, 1, 2)
	if err := terms.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady in the second term: %v", err)
	}
}

func TestTerms_barrier_retried_before_work(t *testing.T) {
	raft := newRaft(3)
	terms, w, _, _ := start(t, raft)
	raft.setLeader(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := terms.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady while the barrier is retried: %v", err)
	}
	if n := raft.barrierCount(); n != 4 {
		t.Fatalf("ready after %d barriers, want 4 (3 refused)", n)
	}
	counted(t, w, 1, 0, 1)
}

func TestTerms_wait_ready_bounded(t *testing.T) {
	raft := newRaft(1 << 30) // the barrier never passes
	terms, w, _, _ := start(t, raft)
	raft.setLeader(true)
	poll.For(t, "a barrier tried", 10*time.Second, poll.True(func() bool { return raft.barrierCount() > 0 }))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := terms.WaitReady(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady with no barrier applied: %v", err)
	}
	if b, _, r := w.counts(); b != 0 || r != 0 {
		t.Fatalf("work began (%d) or the term was marked ready (%d) before its barrier", b, r)
	}
	// Leadership lost while waited for: the wait ends at once.
	errc := make(chan error, 1)
	go func() { errc <- terms.WaitReady(context.Background()) }()
	raft.setLeader(false)
	select {
	case err := <-errc:
		if !errors.Is(err, ErrNotLeader) {
			t.Fatalf("WaitReady when leadership went: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitReady went on after leadership went")
	}
}

func TestTerms_run_stops_the_work(t *testing.T) {
	raft := newRaft(0)
	_, w, cancel, done := start(t, raft)
	raft.setLeader(true)
	counted(t, w, 1, 0, 1)
	cancel()
	<-done
	if _, e, _ := w.counts(); e != 1 {
		t.Fatal("Run returned before the term's work ended")
	}
}
