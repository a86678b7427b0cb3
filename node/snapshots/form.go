package snapshots

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/svc-project/svc/backup"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/node/membership"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// fileRestore, in the identity dir of a peer formed from a snapshot, is the
// state its first leader term installs; it goes once installed.
const fileRestore = "restore.state"

// FormCluster makes dir the identity of the first peer of a new cluster
// restored from the snapshot file at path (svc agent --bootstrap-expect 1
// --restore FILE): the file is read whole and checked first, then the
// identity is made with the snapshot's CA and secret, and the state to
// install is kept in dir. The identity is saved last: a host stopped on
// the way has none, and starts over.
func FormCluster(path, dir string, h membership.Host, now time.Time) (*fabric.Identity, backup.Header, error) {
	in, err := os.Open(path)
	if err != nil {
		return nil, backup.Header{}, fmt.Errorf("restore: %w", err)
	}
	defer in.Close()
	rd, err := backup.NewReader(in)
	if err != nil {
		return nil, backup.Header{}, fmt.Errorf("restore from %s: %w", path, err)
	}
	hdr := rd.Header
	if len(hdr.Secret) == 0 {
		return nil, hdr, fmt.Errorf("restore from %s: the file holds no cluster secret", path)
	}
	tmp, err := spool(rd, dir)
	if err != nil {
		return nil, hdr, fmt.Errorf("restore from %s: %w", path, err)
	}
	defer discard(tmp)
	clusterID, fb, err := raftfsm.SnapshotFabric(tmp)
	if err != nil {
		return nil, hdr, fmt.Errorf("restore from %s: %w", path, err)
	}
	id, self, err := membership.FormFromSnapshot(dir, h, clusterID, hdr.Secret, fb, now)
	if err != nil {
		return nil, hdr, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return nil, hdr, err
	}
	_, state, err := raftfsm.RestoreAsNewCluster(tmp, self, now)
	if err != nil {
		return nil, hdr, fmt.Errorf("restore from %s: %w", path, err)
	}
	if err := writeFile(filepath.Join(dir, fileRestore), state); err != nil {
		return nil, hdr, fmt.Errorf("restore: %w", err)
	}
	if err := id.Save(); err != nil {
		return nil, hdr, err
	}
	return id, hdr, nil
}

// writeFile writes b to path (0600) through a file renamed into place.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// PendingRestore says whether the peer with identity dir was formed from a
// snapshot it has not installed yet.
func PendingRestore(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, fileRestore))
	return err == nil
}

// leaderWait bounds how long a peer formed from a snapshot waits to lead
// the cluster of one it bootstrapped.
const leaderWait = time.Minute

// InstallPending installs the state a peer formed from a snapshot keeps
// (PendingRestore), once it leads, and then forgets it. Raft state written
// before (a peer stopped between its bootstrap and the install) is
// replaced: the restore is the cluster's first state.
func InstallPending(ctx context.Context, store *raftstore.Store, dir string, log *slog.Logger) error {
	path := filepath.Join(dir, fileRestore)
	state, err := os.ReadFile(path)
	index := raftfsm.SnapshotIndex(state)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	for !store.IsLeader() {
		select {
		case <-wctx.Done():
			return fmt.Errorf("restore: this peer did not lead its new cluster within %s", leaderWait)
		case <-store.LeaderChanged():
		case <-time.After(100 * time.Millisecond):
		}
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	// Raft installs a snapshot only once the first configuration is applied.
	if err := store.Barrier(rctx); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if err := store.RestoreSnapshot(rctx, bytes.NewReader(state), int64(len(state)), index); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	log.Warn("formed a new cluster from a snapshot: its records, CA and keys are the snapshot's; other hosts join with join tokens", "state_bytes", len(state))
	return nil
}
