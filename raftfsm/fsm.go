package raftfsm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/hashicorp/raft"
)

// snapshotVersion is written into every snapshot.
const snapshotVersion = 1

// Result is what FSM.Apply returns for each log entry.
type Result struct {
	Value any
	Err   error
}

// FSM is the deterministic state machine that Raft drives. Its view methods
// are safe to call from any goroutine and return copies.
type FSM struct {
	log *slog.Logger

	// applyMu makes each Apply and Restore whole with respect to the
	// others: a host that followed the log (node/follow) and then joined
	// Raft has both feed it for a moment, and an entry's check against
	// the index and its apply must not interleave with another's.
	applyMu sync.Mutex
	mu      sync.RWMutex
	state   *State
	index   uint64
	changed chan struct{} // closed and replaced after every change
	topics  waiters       // Watch's channels
	journal nodeJournal   // the nodes each change touched (NodesSince)
	halted  *Halt         // set once a command could not be applied (level.go)
}

// NewFSM returns a state machine over an empty state.
func NewFSM(log *slog.Logger) *FSM {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FSM{log: log, state: NewState(), changed: make(chan struct{})}
}

var _ raft.FSM = (*FSM)(nil)

// Apply applies one committed log entry. A command that cannot be decoded
// means the log is corrupt or written by a newer, incompatible version; the
// peer stops rather than diverge. Unknown commands flagged ignorable are skipped.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if l.Index <= f.Index() {
		// applied already: a host that followed the log through a member
		// (node/follow) and then joined the Raft group is sent again
		// entries its state holds
		return nil
	}
	if _, halted := f.Halted(); halted {
		return Result{Err: ErrHalted}
	}
	c, err := Decode(l.Data)
	if err != nil {
		if errors.Is(err, ErrUnknownCommand) && c.Type&FlagIgnorable != 0 {
			f.log.Warn("skipping unknown ignorable command", "type", byte(c.Type), "index", l.Index)
			f.setIndex(l.Index)
			return nil
		}
		f.halt(l.Index, c.Type, err)
		return Result{Err: fmt.Errorf("%w: %w", ErrHalted, err)}
	}
	res := f.ApplyCommand(l.Index, c)
	if errors.Is(res.Err, ErrBadBody) {
		// A body this svc cannot read is a newer svc's, or a corrupt log:
		// never applied in part. (ApplyCommand changed nothing: the body is
		// decoded before any change.)
		f.halt(l.Index, c.Type, res.Err)
		return Result{Err: fmt.Errorf("%w: %w", ErrHalted, res.Err)}
	}
	return res
}

// ApplyCommand applies a decoded command at the given log index. It never
// panics: a bad body is returned as an error wrapping ErrBadBody.
func (f *FSM) ApplyCommand(index uint64, c Command) Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	ns, name := vmOf(c)
	before := f.state.vmNode(ns, name)
	v, err := f.state.apply(index, c)
	if index > f.index && !errors.Is(err, ErrBadBody) { // an unreadable entry was not applied
		f.index = index
	}
	close(f.changed)
	f.changed = make(chan struct{})
	if err == nil { // a refused command changed nothing
		f.topics.wake(false, f.state.topicsOf(c, ns, name, before)...)
		f.journal.noteCommand(c, before, f.state.vmNode(ns, name))
	}
	return Result{Value: v, Err: err}
}

func (f *FSM) setIndex(i uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i > f.index {
		f.index = i
	}
	close(f.changed)
	f.changed = make(chan struct{})
}

type snapshotFile struct {
	Version int `json:"version"`
	// Level is the command level of the svc that wrote it (0: before
	// levels, 1): a replica of a lower level cannot read its state whole.
	Level int    `json:"level,omitempty"`
	Index uint64 `json:"index"`
	State *State `json:"state"`
}

// Snapshot serialises the state under the read lock; Persist then only writes.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.halted != nil {
		return nil, fmt.Errorf("snapshot: %w at index %d: no snapshot may claim the entries after it", ErrHalted, f.halted.Index)
	}
	b, err := json.Marshal(snapshotFile{Version: snapshotVersion, Level: Level, Index: f.index, State: f.state})
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &snapshot{data: b}, nil
}

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	// Maps an older snapshot lacks stay empty rather than nil.
	sf := snapshotFile{State: NewState()}
	dec := json.NewDecoder(rc)
	if err := dec.Decode(&sf); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if sf.Version > snapshotVersion {
		return fmt.Errorf("restore: snapshot version %d is newer than this peer understands (%d)", sf.Version, snapshotVersion)
	}
	if sf.Level > Level {
		// The state may hold what this svc would drop: stop, as for a
		// command it does not know.
		f.halt(sf.Index, 0, fmt.Errorf("a snapshot of command level %d", sf.Level))
		return fmt.Errorf("restore: %w: the snapshot is of command level %d, this svc knows %d; upgrade this peer", ErrHalted, sf.Level, Level)
	}
	if sf.State == nil {
		sf.State = NewState()
	}
	sf.State.idx = buildIndex(sf.State)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = sf.State
	f.index = sf.Index
	f.journal.noteAll()
	close(f.changed)
	f.changed = make(chan struct{})
	f.topics.wake(true)
	return nil
}

type snapshot struct{ data []byte }

func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s.data); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *snapshot) Release() {}

// Index returns the index of the last applied log entry.
func (f *FSM) Index() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.index
}

// Changed returns a channel that is closed at the next change of the state.
func (f *FSM) Changed() <-chan struct{} {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.changed
}

// Wait returns once cond holds (it is checked now and after every change of
// the state) or ctx ends.
func (f *FSM) Wait(ctx context.Context, cond func() bool) error {
	return wait(ctx, f.Changed, cond)
}

// WaitIndex returns once the replica has applied index, or ctx ends.
func (f *FSM) WaitIndex(ctx context.Context, index uint64) error {
	return f.Wait(ctx, func() bool { return f.Index() >= index })
}

// Dump returns the JSON of the whole state, for tests and debugging.
func (f *FSM) Dump() ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return json.Marshal(f.state)
}
