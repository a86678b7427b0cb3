package raftstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/raftfsm"
)

// Snapshot is a consistent copy of the replicated state as of one index.
type Snapshot struct {
	Index, Term uint64
	Size        int64
	// Body is the FSM's snapshot; the caller closes it.
	Body io.ReadCloser
}

// TakeSnapshot snapshots the state as this peer has applied it (or opens
// the newest snapshot when nothing was applied since), streamed from the
// snapshot store's file.
func (s *Store) TakeSnapshot(ctx context.Context) (Snapshot, error) {
	f := s.raft.Snapshot()
	if err := s.wait(ctx, f); err != nil {
		if !errors.Is(err, raft.ErrNothingNewToSnapshot) {
			return Snapshot{}, fmt.Errorf("take a snapshot: %w", err)
		}
		list, lerr := s.snaps.List()
		if lerr != nil || len(list) == 0 {
			return Snapshot{}, fmt.Errorf("take a snapshot: %w (and no snapshot to open: %v)", err, lerr)
		}
		meta, rc, oerr := s.snaps.Open(list[0].ID)
		if oerr != nil {
			return Snapshot{}, fmt.Errorf("open snapshot %s: %w", list[0].ID, oerr)
		}
		return Snapshot{Index: meta.Index, Term: meta.Term, Size: meta.Size, Body: rc}, nil
	}
	meta, rc, err := f.Open()
	if err != nil {
		return Snapshot{}, fmt.Errorf("open the snapshot: %w", err)
	}
	return Snapshot{Index: meta.Index, Term: meta.Term, Size: meta.Size, Body: rc}, nil
}

// RestoreTimeout bounds a restore whose caller set no deadline.
const RestoreTimeout = time.Minute

// RestoreSnapshot makes body (size bytes of an FSM snapshot) the state of
// the whole cluster: the leader installs it and sends it to every follower
// (raft.Restore; the Raft configuration stays the cluster's own). The log
// goes on after index, the state's own, or after its last entry when that
// is later: no index is used twice. Leader only; it returns once a quorum
// has the restored state.
func (s *Store) RestoreSnapshot(ctx context.Context, body io.Reader, size int64, index uint64) error {
	if s.raft.State() != raft.Leader {
		return fmt.Errorf("restore: %w", raftfsm.ErrNotLeader)
	}
	timeout := RestoreTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Size: size, Index: index}
	if err := s.raft.Restore(meta, body, timeout); err != nil {
		return fmt.Errorf("restore: %w", mapRaftErr(err))
	}
	return nil
}
