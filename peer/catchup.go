package peer

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/catchup"
	"github.com/svc-project/svc/node/term"
)

// What the leader tells a peer catching up (package catchup keeps whether
// this peer's replica has).

// CommitIndexPath is the API path where the leader tells the index of the
// last command it applied (the path keeps its first name).
const CommitIndexPath = "/api/v1/internal/commit-index"

// Errors of catching up.
var (
	errNoLeader      = errors.New("no leader is known")
	errLeaderNotDone = errors.New("the leader has not yet applied the entries of earlier terms")
)

// AppliedIndex returns, if this peer leads, the index of the last command
// its replica applied once it has applied the entries of earlier terms (a
// leader just elected is waited for, bounded by ctx): every acknowledged
// write is at or below it (a write is acknowledged once the leader applied
// it). It is not raft's commit index: the no-op that opens a term and
// barriers are committed entries no replica records, so a replica waiting
// for them would wait for the next write.
func (p *Peer) AppliedIndex(ctx context.Context) (uint64, error) {
	switch err := p.terms.WaitReady(ctx); {
	case errors.Is(err, term.ErrNotLeader):
		return 0, fmt.Errorf("peer %s is not the leader", p.cfg.Name)
	case err != nil:
		return 0, fmt.Errorf("%w (waited: %w)", errLeaderNotDone, err)
	}
	return p.FSM().Index(), nil
}

// leaderAppliedIndex asks the leader (or this peer, if it leads) for the
// index of the last command it applied.
func (p *Peer) leaderAppliedIndex(ctx context.Context) (uint64, error) {
	if p.IsLeader() {
		return p.AppliedIndex(ctx)
	}
	_, addr := p.LeaderAPI()
	if addr == "" {
		return 0, errNoLeader
	}
	var out api.CommitIndex
	cl := &api.Client{BaseURL: p.links.PeerScheme() + "://" + addr, HTTP: p.peerHTTP}
	if err := cl.Do(ctx, http.MethodGet, CommitIndexPath, nil, &out); err != nil {
		return 0, fmt.Errorf("ask the leader for its applied index: %w", err)
	}
	return out.Index, nil
}

// Readiness is whether this peer's replica has caught up since the start.
func (p *Peer) Readiness() *catchup.Tracker { return p.caught }
