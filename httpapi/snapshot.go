package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/backup"
	"github.com/svc-project/svc/node/snapshots"
	"github.com/svc-project/svc/raftfsm"
)

// Snapshots saves and restores the cluster's state (node/snapshots).
type Snapshots interface {
	Save(ctx context.Context, w io.Writer, started func(backup.Header)) (snapshots.Saved, error)
	Restore(ctx context.Context, r io.Reader) (snapshots.Restored, error)
}

func (s *clusterAPI) needSnapshots() (Snapshots, error) {
	if s.snapshots == nil {
		return nil, unavailable("", "this peer takes no snapshots")
	}
	return s.snapshots, nil
}

// saveSnapshot streams the cluster's state. It runs on the leader, after a
// read barrier (the route's), so that the file holds every write
// acknowledged before it was asked for, through any peer; with ?stale=true
// it is the state as the peer asked has applied it (a cluster with no
// leader). An error once the answer has started cuts the connection: the
// client's file then fails its checksum and is never taken for whole.
func (s *clusterAPI) saveSnapshot(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	snaps, err := s.needSnapshots()
	if err != nil {
		return err
	}
	started := false
	_, err = snaps.Save(r.Context(), w, func(h backup.Header) {
		started = true
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="svc-%s-%d.snap"`, h.ClusterID, h.Index))
		w.Header().Set(api.HeaderSnapshotIndex, strconv.FormatUint(h.Index, 10))
		w.Header().Set(api.HeaderSnapshotTerm, strconv.FormatUint(h.Term, 10))
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
	})
	if err == nil {
		return nil
	}
	if !started {
		if errors.Is(err, snapshots.ErrNoSecret) {
			return unavailable("", "%v", err)
		}
		return err
	}
	s.log.Warn("snapshot cut short", "err", err)
	panic(http.ErrAbortHandler)
}

// restoreSnapshot takes a snapshot file of this cluster and installs it on
// every peer (leader: a follower streams the file to it as it comes).
func (s *clusterAPI) restoreSnapshot(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	snaps, err := s.needSnapshots()
	if err != nil {
		return err
	}
	got, err := snaps.Restore(r.Context(), r.Body)
	switch {
	case errors.Is(err, backup.ErrCorrupt):
		return badRequest("the snapshot file is not whole; nothing was restored: %v", err)
	case errors.Is(err, raftfsm.ErrBadSnapshot):
		return badRequest("%v; nothing was restored", err)
	case errors.Is(err, raftfsm.ErrOtherCluster):
		return errorf(http.StatusConflict, api.ReasonConflict, "%v", err)
	case err != nil:
		return err
	}
	writeJSON(w, http.StatusOK, api.SnapshotRestored{
		ClusterID: got.ClusterID, Index: got.Index, Term: got.Term, TakenAt: got.TakenAt,
		Message: fmt.Sprintf("restored the state of index %d (taken %s) on every peer", got.Index, got.TakenAt.Format("2006-01-02 15:04:05Z07:00")),
	})
	return nil
}
