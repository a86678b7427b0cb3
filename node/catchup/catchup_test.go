package catchup

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/poll"
)

// replica is an applied index that tests move.
type replica struct {
	mu      sync.Mutex
	idx     uint64
	changed chan struct{}
}

func newReplica() *replica { return &replica{changed: make(chan struct{})} }

func (r *replica) Index() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.idx
}

func (r *replica) apply(idx uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.idx = idx
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *replica) WaitIndex(ctx context.Context, idx uint64) error {
	for {
		r.mu.Lock()
		done, ch := r.idx >= idx, r.changed
		r.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestTracker_mark(t *testing.T) {
	tr := New(Config{Replica: newReplica()})
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if tr.CaughtUp() || tr.WaitCaughtUp(short) {
		t.Fatal("caught up before it was marked")
	}
	tr.Mark("a test")
	tr.Mark("twice is no panic")
	if !tr.CaughtUp() || !tr.WaitCaughtUp(ctxT(t)) {
		t.Fatal("not caught up once marked")
	}
	select {
	case <-tr.CaughtUpCh():
	default:
		t.Fatal("the channel is open once marked")
	}
}

// SyncReplica returns once the replica has the leader's index, not before.
func TestTracker_SyncReplica_waits_for_the_leaders_index(t *testing.T) {
	r := newReplica()
	tr := New(Config{Replica: r, LeaderIndex: func(context.Context) (uint64, error) { return 7, nil }})
	done := make(chan error, 1)
	go func() { done <- tr.SyncReplica(ctxT(t)) }()
	r.apply(6)
	select {
	case err := <-done:
		t.Fatalf("returned at index 6 of 7: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	r.apply(7)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Callers that arrive while a round trip is in flight share the next one,
// which starts after they called: never more than one at a time, never an
// answer older than the call.
func TestTracker_SyncReplica_shares_round_trips(t *testing.T) {
	r := newReplica()
	r.apply(100)
	release := make(chan struct{})
	var calls, inFlight, most atomic.Int32
	leader := func(context.Context) (uint64, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		if n > most.Load() {
			most.Store(n)
		}
		calls.Add(1)
		<-release
		return 1, nil
	}
	tr := New(Config{Replica: r, LeaderIndex: leader})
	first := make(chan error, 1)
	go func() { first <- tr.SyncReplica(ctxT(t)) }()
	poll.For(t, "the first round in flight", 10*time.Second, poll.True(func() bool { return calls.Load() > 0 }))
	waiting := func() int { // callers of the round that has not started
		tr.sync.mu.Lock()
		defer tr.sync.mu.Unlock()
		if tr.sync.pending == nil {
			return 0
		}
		return tr.sync.pending.callers
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := tr.SyncReplica(ctxT(t)); err != nil {
				t.Error(err)
			}
		})
	}
	poll.For(t, "eight callers waiting for the next round", 10*time.Second, poll.True(func() bool { return waiting() == 8 }))
	close(release)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("%d leader round trips for 9 callers (one in flight, the others joining the next)", got)
	}
	if most.Load() != 1 {
		t.Fatalf("%d round trips at once", most.Load())
	}
}

// Run retries a failing sync and marks the replica once one succeeds.
func TestTracker_Run_retries_until_synced(t *testing.T) {
	r := newReplica()
	r.apply(3)
	var tries atomic.Int32
	tr := New(Config{Replica: r, LeaderIndex: func(context.Context) (uint64, error) {
		if tries.Add(1) < 3 {
			return 0, errors.New("no leader is known")
		}
		return 3, nil
	}})
	tr.Run(ctxT(t))
	if !tr.CaughtUp() || tries.Load() != 3 {
		t.Fatalf("caught up %v after %d tries", tr.CaughtUp(), tries.Load())
	}
}

// Run ends with its context, uncaught.
func TestTracker_Run_ends_with_ctx(t *testing.T) {
	tr := New(Config{Replica: newReplica(), LeaderIndex: func(context.Context) (uint64, error) {
		return 0, errors.New("no leader is known")
	}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tr.Run(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run outlived its context")
	}
	if tr.CaughtUp() {
		t.Fatal("caught up without a sync")
	}
}
