package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// proposer records the audit batches it is given; the first fail calls
// fail with errFail.
type proposer struct {
	mu      sync.Mutex
	fail    int
	calls   int
	batches []raftfsm.AuditAppend
	ctxErr  []error // each call's context error when it was made
}

var errFail = errors.New("no leader")

func (p *proposer) AppendAudit(ctx context.Context, c raftfsm.AuditAppend, tokens []string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	p.ctxErr = append(p.ctxErr, ctx.Err())
	if len(tokens) != len(c.Entries) {
		return fmt.Errorf("%d tokens for %d entries", len(tokens), len(c.Entries))
	}
	if p.calls <= p.fail {
		return errFail
	}
	for i, e := range c.Entries {
		if tokens[i] != "tok-"+e.Path {
			return fmt.Errorf("entry %s went with token %q", e.Path, tokens[i])
		}
	}
	c.Entries = slices.Clone(c.Entries)
	p.batches = append(p.batches, c)
	return nil
}

// written returns the paths of the entries written, in order, and the
// number of calls.
func (p *proposer) written() (paths []string, calls int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range p.batches {
		for _, e := range b.Entries {
			paths = append(paths, e.Path)
		}
	}
	return paths, p.calls
}

// count reads a counter of the recorder.
func count(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func entry(i int) raftfsm.AuditEntry {
	return raftfsm.AuditEntry{Peer: "p1", Method: "POST", Path: fmt.Sprintf("/api/v1/e%d", i), Code: 200}
}

func paths(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, entry(i).Path)
	}
	return out
}

func newRecorder(prop *proposer) *Recorder {
	return New(prop, 500, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
}

// run runs r until the test ends.
func run(t *testing.T, r *Recorder) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestRecorder_batches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries int
		fail    int   // the first calls that fail
		calls   int   // the calls expected
		batches []int // the sizes of the batches written
	}{
		{"a few entries wait for the tick, then go in one batch", 3, 0, 1, []int{3}},
		{"a full batch goes at once, the rest at the tick", raftfsm.MaxAuditBatch + 2, 0, 2, []int{raftfsm.MaxAuditBatch, 2}},
		{"a failed write is tried again with the same entries", 3, 2, 3, []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prop := &proposer{fail: tc.fail}
			r := newRecorder(prop)
			for i := range tc.entries {
				r.Record(entry(i), "tok-"+entry(i).Path)
			}
			run(t, r)
			want := paths(0, tc.entries)
			poll.For(t, "the entries written", 10*time.Second, func() error {
				if got, calls := prop.written(); !slices.Equal(got, want) || calls != tc.calls {
					return fmt.Errorf("%d entries written in %d calls", len(got), calls)
				}
				return nil
			})
			prop.mu.Lock()
			var sizes []int
			for _, b := range prop.batches {
				sizes = append(sizes, len(b.Entries))
			}
			prop.mu.Unlock()
			if !slices.Equal(sizes, tc.batches) {
				t.Fatalf("batches of %v entries, want %v", sizes, tc.batches)
			}
			if n := count(t, r.written); n != float64(tc.entries) {
				t.Fatalf("written counter %v, want %d", n, tc.entries)
			}
			prop.mu.Lock()
			defer prop.mu.Unlock()
			if prop.batches[0].Keep != 500 {
				t.Fatalf("a batch asks the log to keep %d, want 500", prop.batches[0].Keep)
			}
		})
	}
}

// A batch that reached the most a command carries and still fails is
// dropped and counted, so that a cluster refusing it holds up nothing else.
func TestRecorder_drops_a_full_batch_that_fails(t *testing.T) {
	prop := &proposer{fail: 1}
	r := newRecorder(prop)
	for i := range raftfsm.MaxAuditBatch + 1 {
		r.Record(entry(i), "tok-"+entry(i).Path)
	}
	run(t, r)
	poll.For(t, "the entry after the dropped batch written", 10*time.Second, func() error {
		if got, _ := prop.written(); !slices.Equal(got, paths(raftfsm.MaxAuditBatch, raftfsm.MaxAuditBatch+1)) {
			return fmt.Errorf("written %d entries", len(got))
		}
		return nil
	})
	if n := count(t, r.dropped); n != raftfsm.MaxAuditBatch {
		t.Fatalf("dropped counter %v, want %d", n, raftfsm.MaxAuditBatch)
	}
}

// Record never blocks: past the buffer it drops and counts.
func TestRecorder_full_buffer_drops(t *testing.T) {
	r := newRecorder(&proposer{})
	for i := range buffered + 5 {
		r.Record(entry(i), "tok-"+entry(i).Path)
	}
	if n := count(t, r.dropped); n != 5 {
		t.Fatalf("dropped counter %v, want 5", n)
	}
}

// When the peer stops, what is buffered is written with a context of its
// own (the peer's has ended).
func TestRecorder_last_flush(t *testing.T) {
	prop := &proposer{}
	r := newRecorder(prop)
	for i := range 3 {
		r.Record(entry(i), "tok-"+entry(i).Path)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r.Run(ctx)
	got, calls := prop.written()
	if !slices.Equal(got, paths(0, 3)) || calls != 1 {
		t.Fatalf("written %v in %d calls, want the 3 entries in one", got, calls)
	}
	if err := prop.ctxErr[0]; err != nil {
		t.Fatalf("the last batch was proposed with an ended context: %v", err)
	}
}
