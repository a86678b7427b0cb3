package raftstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Entry is one command of the log, as a host that follows the log without
// being a Raft member applies it (node/follow).
type Entry struct {
	Index uint64 `json:"index"`
	Term  uint64 `json:"term"`
	Data  []byte `json:"data"`
}

// ErrCompacted is returned by Entries when the entries asked for were
// compacted into a snapshot: the follower starts again from the state.
var ErrCompacted = errors.New("the entries were compacted into a snapshot")

// Entries returns the commands of the log from index from on that this
// peer has applied (so committed), in order: at most maxEntries and, past
// the first, maxBytes of data; and the index to ask from next (past the
// last entry read, commands or not). It returns ErrCompacted when from is
// before the first entry the log keeps.
func (s *Store) Entries(from uint64, maxEntries, maxBytes int) ([]Entry, uint64, error) {
	if from == 0 {
		from = 1
	}
	applied := s.FSM.Index()
	if from > applied {
		return nil, from, nil
	}
	first, err := s.logs.FirstIndex()
	if err != nil {
		return nil, from, fmt.Errorf("read the log's first index: %w", err)
	}
	if first == 0 || from < first {
		return nil, from, fmt.Errorf("entries from %d, the log keeps %d on: %w", from, first, ErrCompacted)
	}
	var out []Entry
	size := 0
	next := from
	for ; next <= applied && len(out) < maxEntries; next++ {
		var l raft.Log
		if err := s.logs.GetLog(next, &l); err != nil {
			if errors.Is(err, raft.ErrLogNotFound) {
				// compacted while read: the follower starts from the state
				return nil, from, fmt.Errorf("entry %d: %w", next, ErrCompacted)
			}
			return nil, from, fmt.Errorf("read entry %d: %w", next, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if len(out) > 0 && size+len(l.Data) > maxBytes {
			break
		}
		size += len(l.Data)
		out = append(out, Entry{Index: l.Index, Term: l.Term, Data: l.Data})
	}
	return out, next, nil
}

// LastContact is when this peer last heard a leader over Raft (zero if
// never); a leader hears itself now.
func (s *Store) LastContact() time.Time {
	if s.raft.State() == raft.Leader {
		return time.Now()
	}
	return s.raft.LastContact()
}
