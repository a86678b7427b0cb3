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
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// ErrNoSecret refuses a snapshot on a peer without the cluster secret (one
// admitted pending): the file would not restore a cluster.
var ErrNoSecret = errors.New("this peer does not hold the cluster secret (it awaits approval); ask another peer")

// Config configures a Service.
type Config struct {
	// Name is this peer's; Version the svc version it runs.
	Name, Version string
	Store         *raftstore.Store
	FSM           *raftfsm.FSM
	// Secret returns the cluster secret (nil on a peer admitted pending).
	Secret func() []byte
	// ClusterID is the cluster's.
	ClusterID string
	// Dir is where uploads wait until they are checked.
	Dir  string
	Disk *diskbudget.Budget
	Log  *slog.Logger
}

// Service saves and restores snapshots.
type Service struct{ cfg Config }

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg}
}

// Saved is what a save wrote.
type Saved struct {
	Index, Term uint64
	Size        int64
}

// Save writes a snapshot file of the state as this peer has applied it to
// w, streamed from the Raft snapshot (the API calls it on the leader after
// a read barrier, so that it holds every acknowledged write). It fails
// before it writes anything when it cannot take one.
func (s *Service) Save(ctx context.Context, w io.Writer, started func(backup.Header)) (Saved, error) {
	secret := s.cfg.Secret()
	if secret == nil {
		return Saved{}, ErrNoSecret
	}
	snap, err := s.cfg.Store.TakeSnapshot(ctx)
	if err != nil {
		return Saved{}, err
	}
	defer snap.Body.Close()
	h := backup.Header{ClusterID: s.cfg.ClusterID, Index: snap.Index, Term: snap.Term, CreatedAt: time.Now().UTC(),
		SVCVersion: s.cfg.Version, Peer: s.cfg.Name, Size: snap.Size, Secret: secret}
	if started != nil {
		started(h)
	}
	if err := backup.Write(w, h, snap.Body); err != nil {
		return Saved{}, err
	}
	return Saved{Index: snap.Index, Term: snap.Term, Size: snap.Size}, nil
}

// Restored is what a restore installed.
type Restored struct {
	// ClusterID, Index and Term are the snapshot's, as its header says.
	ClusterID   string
	Index, Term uint64
	TakenAt     time.Time
	// Size is the state installed (the snapshot's, with the cluster's
	// peers as they are now).
	Size int64
}

// Restore reads a whole snapshot file of this cluster from r, checks it
// (nothing is restored from a file cut short or altered: it is kept on disk
// until its checksum is read), and installs its state on every peer. Leader
// only. The cluster's peers stay as they are (raftfsm.FSM.RestoreInPlace).
func (s *Service) Restore(ctx context.Context, r io.Reader) (Restored, error) {
	rd, err := backup.NewReader(r)
	if err != nil {
		return Restored{}, err
	}
	h := rd.Header
	if h.ClusterID != s.cfg.ClusterID {
		return Restored{}, fmt.Errorf("%w: it is of cluster %s, this is %s (svc agent --restore forms a new cluster from it)", raftfsm.ErrOtherCluster, h.ClusterID, s.cfg.ClusterID)
	}
	hold, err := s.cfg.Disk.Reserve("a snapshot upload", h.Size, "")
	if err != nil {
		return Restored{}, err
	}
	defer hold.Release()
	f, err := spool(rd, s.cfg.Dir)
	if err != nil {
		return Restored{}, err
	}
	defer discard(f)
	state, err := s.cfg.FSM.RestoreInPlace(f)
	if err != nil {
		return Restored{}, err
	}
	if err := s.cfg.Store.RestoreSnapshot(ctx, bytes.NewReader(state), int64(len(state)), h.Index); err != nil {
		return Restored{}, err
	}
	s.cfg.Log.Warn("restored the cluster's state from a snapshot", "index", h.Index, "term", h.Term, "taken", h.CreatedAt, "by_peer", h.Peer, "svc", h.SVCVersion)
	return Restored{ClusterID: h.ClusterID, Index: h.Index, Term: h.Term, TakenAt: h.CreatedAt, Size: int64(len(state))}, nil
}

// spool writes a snapshot's state to a temporary file in dir and checks the
// whole file (backup.Reader.Verify): nothing is read from the state before
// it is known whole. The file is returned at its start; discard removes it.
func spool(rd *backup.Reader, dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	f, err := os.CreateTemp(dir, "snapshot-*.state")
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if _, err := io.Copy(f, rd.Body()); err != nil {
		discard(f)
		return nil, fmt.Errorf("%w: %w", backup.ErrCorrupt, err)
	}
	if err := rd.Verify(); err != nil {
		discard(f)
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		discard(f)
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return f, nil
}

// discard closes and removes a spooled state.
func discard(f *os.File) {
	_ = f.Close()
	_ = os.Remove(f.Name())
}

// UploadDir is where a peer keeps uploads under its data dir.
func UploadDir(dataDir string) string { return filepath.Join(dataDir, "snapshot-uploads") }
