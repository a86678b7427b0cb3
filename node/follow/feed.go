package follow

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// The routes a member serves its Feed at (httpapi), to peers only.
const (
	LogPath   = "/api/v1/internal/log"
	StatePath = "/api/v1/internal/state"
)

// Limits of one answer of a Feed.
const (
	// MaxEntries bounds the commands of one batch.
	MaxEntries = 512
	// MaxBatchBytes bounds a batch's command data (past its first
	// command, which goes alone if larger).
	MaxBatchBytes = 4 << 20
	// MaxWait bounds how long a read waits for a command past the ones
	// applied.
	MaxWait = 30 * time.Second
)

// Log is the log as a member holds it: raftstore.Store.
type Log interface {
	Entries(from uint64, maxEntries, maxBytes int) ([]raftstore.Entry, uint64, error)
}

// Feed serves a member's log to the hosts that follow it.
type Feed struct {
	Log Log
	FSM *raftfsm.FSM
	// Leader names the leader as the member knows it ("" when it knows
	// none); a following host learns where to send writes from it.
	Leader func() string
	// Member says whether this peer is in the Raft group now (nil: it
	// is): one outside it has no log to serve, and answers 503.
	Member func() bool
	// LeaderChanged, when set, is closed at the next change of the leader
	// as the member knows it: a read waiting for commands returns then,
	// so that its follower learns the new leader at once (a new term
	// brings no command of its own).
	LeaderChanged func() <-chan struct{}
}

// ErrNotMember is returned by a Feed whose peer is outside the Raft group.
var ErrNotMember = errors.New("this peer is not in the Raft group: it has no log to serve")

// Batch is one answer of a Feed: the commands from the index asked for on,
// in order, and the index to ask from next.
type Batch struct {
	Entries []raftstore.Entry `json:"entries"`
	Next    uint64            `json:"next"`
	// Applied is the index the member had applied when it answered.
	Applied uint64 `json:"applied"`
	// Leader is the leader as the member knew it.
	Leader string `json:"leader,omitempty"`
}

// ErrCompacted is wrapped when the entries asked for are no longer in the
// member's log: the follower copies the state (Feed.State) and goes on
// from its index.
var ErrCompacted = raftstore.ErrCompacted

// Read returns the commands from index from on; when the member has
// applied none yet, it waits for one for up to wait (at most MaxWait) and
// returns an empty batch if none came. It does not wait when the member
// knows another leader than leader (the follower's), and stops waiting
// when the leader changes.
func (f *Feed) Read(ctx context.Context, from uint64, wait time.Duration, leader string) (Batch, error) {
	if from == 0 {
		from = 1
	}
	if f.Member != nil && !f.Member() {
		return Batch{}, ErrNotMember
	}
	if f.FSM.Index() < from && wait > 0 && f.leader() == leader {
		wctx, cancel := context.WithTimeout(ctx, min(wait, MaxWait))
		if f.LeaderChanged != nil {
			changed := f.LeaderChanged()
			if f.leader() != leader {
				cancel() // changed just now
			}
			go func() {
				select {
				case <-changed:
					cancel()
				case <-wctx.Done():
				}
			}()
		}
		err := f.FSM.WaitIndex(wctx, from)
		cancel()
		if err != nil && ctx.Err() != nil {
			return Batch{}, fmt.Errorf("wait for entry %d: %w", from, ctx.Err())
		}
	}
	entries, next, err := f.Log.Entries(from, MaxEntries, MaxBatchBytes)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Entries: entries, Next: next, Applied: f.FSM.Index(), Leader: f.leader()}, nil
}

// leader is the leader as the member knows it ("" without Leader).
func (f *Feed) leader() string {
	if f.Leader == nil {
		return ""
	}
	return f.Leader()
}

// State writes the member's whole state as of its last applied command (an
// FSM snapshot: the index and the state) to w.
func (f *Feed) State(w io.Writer) error {
	if f.Member != nil && !f.Member() {
		return ErrNotMember
	}
	snap, err := f.FSM.Snapshot()
	if err != nil {
		return err
	}
	defer snap.Release()
	return snap.Persist(&writerSink{w: w})
}

// writerSink is the raft.SnapshotSink an FSM snapshot persists into when
// it goes to a follower instead of a snapshot store.
type writerSink struct {
	w      io.Writer
	cancel bool
}

func (s *writerSink) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s *writerSink) Close() error {
	if s.cancel {
		return errors.New("the state's copy was cancelled")
	}
	return nil
}
func (s *writerSink) ID() string    { return "follow" }
func (s *writerSink) Cancel() error { s.cancel = true; return nil }
