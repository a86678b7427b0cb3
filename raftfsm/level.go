package raftfsm

import (
	"errors"
	"fmt"
	"time"
)

// Level is the command level this svc knows: the set of command types (and
// state kinds) it applies. Level 1 is every type up to TypeVMConfigSetHot
// (62), what svc applied before levels existed; a release that adds a
// command type raises Level and names the type in LevelOf. Peers report
// their level with their node (NodeFacts.Level; 0, from a peer before
// levels, is 1), and the leader proposes a command only once every voter
// knows it (WriteLevel), so that in a cluster upgraded one host at a time
// no peer meets a command it cannot apply.
const Level = 1

// LevelOf is the command level that brought type t (1 for all types so far).
func LevelOf(t Type) int {
	switch t &^ FlagIgnorable {
	default:
		return 1
	}
}

// ErrHalted is returned for every command a replica is given after it met
// one it cannot apply: it stopped applying rather than diverge.
var ErrHalted = errors.New("this peer stopped applying the cluster's log")

// ErrLevel refuses a command some voter's svc does not know yet.
var ErrLevel = errors.New("a voter runs an svc that does not know this command")

// Halt says why and where a replica stopped applying.
type Halt struct {
	Index  uint64    `json:"index"`
	Type   byte      `json:"type"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// halt stops the replica at index: nothing after it is applied and no
// snapshot is taken (one would claim the state of entries it skipped), so
// that an svc that knows the command, started on this data dir, applies the
// log from where this one stopped. The first halt holds.
func (f *FSM) halt(index uint64, t Type, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.halted != nil {
		return
	}
	f.halted = &Halt{Index: index, Type: byte(t), At: time.Now().UTC(),
		Reason: fmt.Sprintf("log entry %d: %v: it was written by a newer svc (this one knows command level %d); upgrade this peer", index, err, Level)}
	f.log.Error("stopped applying the cluster's log", "index", index, "type", byte(t), "err", err, "level", Level)
	close(f.changed)
	f.changed = make(chan struct{})
}

// Halted says whether the replica stopped applying, and why.
func (f *FSM) Halted() (Halt, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.halted == nil {
		return Halt{}, false
	}
	return *f.halted, true
}

// WriteLevel checks that every voter named knows command type t: a node
// record's level (1 when it reports none), and none for a voter the state
// has no node of (it has not reported yet), which counts as level 1.
func (f *FSM) WriteLevel(t Type, voters []string) error {
	return f.writeLevel(LevelOf(t), t, voters)
}

func (f *FSM) writeLevel(need int, t Type, voters []string) error {
	if need <= 1 {
		return nil
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, v := range voters {
		have := 1
		if n, ok := f.state.Nodes[v]; ok && n.Level > 1 {
			have = n.Level
		}
		if have < need {
			return fmt.Errorf("%w: %w: voter %s knows command level %d, %s needs %d; upgrade every voter first", ErrConflict, ErrLevel, v, have, t, need)
		}
	}
	return nil
}
