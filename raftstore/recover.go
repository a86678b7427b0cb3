package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/svc-project/svc/raftfsm"
)

// ErrLeaderAnswers refuses a recovery while the cluster still has a leader:
// recovering a peer of a working cluster would split it in two.
var ErrLeaderAnswers = errors.New("a leader answers: the cluster has its majority, recovery is refused")

// DefaultRecoverProbe is how long a recovering peer listens for a leader
// first: many election timeouts.
const DefaultRecoverProbe = 5 * time.Second

// Recovery is what a recovery found on the surviving peer.
type Recovery struct {
	// LastIndex and LastTerm are the survivor's last log entry; Applied the
	// last it had applied. The recovered cluster keeps every entry up to
	// LastIndex.
	LastIndex, LastTerm, Applied uint64
	// Dropped are the voters of the old configuration it leaves out.
	Dropped []string
}

// recoverAlone runs the safety check and then raft's recovery on a peer
// that lost its cluster's majority: raft is started on the peer's state as
// it is, and if no leader makes itself known within the probe, it is stopped
// and the configuration rewritten to this peer alone (raft.RecoverCluster,
// which applies every entry of the local log and keeps them in a new
// snapshot).
func recoverAlone(cfg StoreConfig, rc *raft.Config, fsm *raftfsm.FSM, logs raft.LogStore, stable raft.StableStore,
	snaps raft.SnapshotStore, trans raft.Transport, had bool, log *slog.Logger,
) (*Recovery, error) {
	if !had {
		return nil, errors.New("recover: this data dir holds no Raft state to recover from")
	}
	probe := cfg.RecoverProbe
	if probe <= 0 {
		probe = DefaultRecoverProbe
	}
	r, err := raft.NewRaft(rc, fsm, logs, stable, snaps, trans)
	if err != nil {
		return nil, fmt.Errorf("recover: start raft on the old state: %w", err)
	}
	deadline := time.Now().Add(probe)
	var leaderAddr raft.ServerAddress
	var leaderID raft.ServerID
	for time.Now().Before(deadline) {
		if leaderAddr, leaderID = r.LeaderWithID(); leaderAddr != "" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	rec := &Recovery{LastIndex: r.LastIndex(), Applied: r.AppliedIndex()}
	var old raft.Configuration
	if f := r.GetConfiguration(); f.Error() == nil {
		old = f.Configuration()
	}
	if err := r.Shutdown().Error(); err != nil {
		return nil, fmt.Errorf("recover: stop the probe: %w", err)
	}
	if leaderAddr != "" {
		return nil, fmt.Errorf("recover: %w (%s at %s)", ErrLeaderAnswers, leaderID, leaderAddr)
	}
	if last, err := logs.LastIndex(); err == nil && last > 0 {
		var l raft.Log
		if logs.GetLog(last, &l) == nil {
			rec.LastTerm = l.Term
		}
	}
	for _, sv := range old.Servers {
		if string(sv.ID) != cfg.ID && sv.Suffrage == raft.Voter {
			rec.Dropped = append(rec.Dropped, string(sv.ID))
		}
	}
	alone := raft.Configuration{Servers: []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(cfg.ID), Address: trans.LocalAddr()}}}
	if err := raft.RecoverCluster(rc, raftfsm.NewFSM(nil), logs, stable, snaps, trans, alone); err != nil {
		return nil, fmt.Errorf("recover: %w", err)
	}
	log.Warn("recovered: this peer is now the one voter of its cluster; join new hosts with join tokens",
		"last_index", rec.LastIndex, "last_term", rec.LastTerm, "applied", rec.Applied, "dropped", rec.Dropped)
	return rec, nil
}
