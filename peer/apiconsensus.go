package peer

import (
	"context"
	"fmt"

	"github.com/svc-project/svc/httpapi"
	"github.com/svc-project/svc/raftfsm"
)

// APIConsensus returns p as the API proposes through it (httpapi.Config's
// Consensus).
func APIConsensus(p *Peer) httpapi.Consensus { return apiConsensus{p} }

// apiConsensus is the peer as the API proposes through it (httpapi's
// Consensus). The API proposes a write only once it has reached the leader:
// a leader that loses its leadership between its check and the proposal
// refuses it (ErrNotLeader, a 503 the client retries) instead of sending
// the user's command on as the peer's own, which the new leader's proposer
// check would refuse for good (403). Only what this peer may propose for
// itself (an image uploaded or generated here, a failed deploy's removal)
// goes through the leader wherever it is.
type apiConsensus struct{ *Peer }

// Apply proposes on this peer only.
func (c apiConsensus) Apply(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	v, err := c.store.ApplyCommand(ctx, t, body)
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", t, err)
	}
	return v, nil
}

// Propose proposes one of this peer's own commands through the leader.
func (c apiConsensus) Propose(ctx context.Context, t raftfsm.Type, body any) error {
	_, err := c.Peer.Apply(ctx, t, body)
	return err
}
