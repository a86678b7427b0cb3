package peer

import (
	"context"
	"errors"
	"log/slog"

	"github.com/svc-project/svc/node/membership"
	"github.com/svc-project/svc/node/peerbook"
	"github.com/svc-project/svc/node/snapshots"
	"github.com/svc-project/svc/raftstore"
)

// ErrJoinTimeout is sent on Err when a new peer could not join in time.
var ErrJoinTimeout = peerbook.ErrJoinTimeout

// Err delivers a fatal error of the peer's background work (at most one).
func (p *Peer) Err() <-chan error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.errCh == nil {
		p.errCh = make(chan error, 1)
	}
	return p.errCh
}

func (p *Peer) fail(err error) {
	p.mu.Lock()
	if p.errCh == nil {
		p.errCh = make(chan error, 1)
	}
	ch := p.errCh
	p.mu.Unlock()
	select {
	case ch <- err:
	default:
	}
}

// joinGossip joins the gossip pool through the peer book. A peer that
// cannot fails, unless it has Raft state: Raft still works, and the leader
// will reach out to it.
func (p *Peer) joinGossip() {
	err := p.book.Join(p.ctx, p.gossip)
	switch {
	case err == nil:
	case errors.Is(err, ErrJoinTimeout) && p.store.HadState():
		p.cfg.Log.Error("giving up joining gossip; waiting for the leader to reach this peer", "err", err)
	default:
		p.cfg.Log.Error("giving up joining", "err", err)
		p.fail(err)
	}
}

// bootstrap starts the Raft group of a cluster this peer formed (its Init,
// kept in its identity dir, still pending and no Raft state yet): a group of
// one, which the others join with tokens.
func bootstrap(ctx context.Context, store *raftstore.Store, name, identityDir string, log *slog.Logger) error {
	restore := snapshots.PendingRestore(identityDir)
	_, pending := membership.PendingInit(identityDir)
	if store.HadState() && !restore {
		return nil
	}
	if !pending && !restore {
		return nil
	}
	if servers, err := store.Servers(ctx); err != nil || len(servers) == 0 {
		if err := store.BootstrapCluster([]raftstore.Server{{ID: name, Address: store.Addr(), Voter: true}}); err != nil {
			return err
		}
		log.Info("bootstrapped a new cluster")
	}
	if restore {
		return snapshots.InstallPending(ctx, store, identityDir, log)
	}
	return nil
}
