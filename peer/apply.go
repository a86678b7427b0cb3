package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi"
	"github.com/svc-project/svc/raftfsm"
)

// Apply proposes a command. On the leader it goes straight to Raft; on a
// follower, commands a peer may propose for itself (status reports, blob
// holdings, images it received) go through the leader's internal endpoint.
func (p *leaderLink) Apply(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	if p.store.IsLeader() || !t.PeerProposable() {
		v, err := p.store.ApplyCommand(ctx, t, body)
		if err != nil {
			return nil, fmt.Errorf("apply %s: %w", t, err)
		}
		return v, nil
	}
	return nil, p.applyRemote(ctx, t, body, nil)
}

// AppendAudit writes the audit entries of requests this peer received: on
// the leader straight to Raft; elsewhere through the leader, with the
// bearer token of each entry's request (tokens), which the leader checks
// against the entry's subject and never writes (httpapi's vetAudit).
func (p *leaderLink) AppendAudit(ctx context.Context, c raftfsm.AuditAppend, tokens []string) error {
	if p.store.IsLeader() {
		if _, err := p.store.ApplyCommand(ctx, raftfsm.TypeAuditAppend, c); err != nil {
			return fmt.Errorf("apply %s: %w", raftfsm.TypeAuditAppend, err)
		}
		return nil
	}
	return p.applyRemote(ctx, raftfsm.TypeAuditAppend, c, tokens)
}

// applyRemote proposes a command of this peer's own through the leader
// (tokens: see api.ApplyRequest).
func (p *leaderLink) applyRemote(ctx context.Context, t raftfsm.Type, body any, tokens []string) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode %s: %w", t, err)
	}
	// A peer that stopped leading refuses the proposal unrun (503): ask
	// the leader again, a bounded number of times.
	for attempt := 0; ; attempt++ {
		name, addr, err := p.WaitLeader(ctx)
		if err != nil {
			return fmt.Errorf("apply %s: %w", t, err)
		}
		if name == p.cfg.Name {
			_, err := p.store.ApplyCommand(ctx, t, json.RawMessage(b))
			return err
		}
		cl := &api.Client{BaseURL: p.links.PeerScheme() + "://" + addr, HTTP: p.peerHTTP} // over the fabric: the leader knows this peer by its certificate
		h, err := cl.DoHeader(ctx, http.MethodPost, "/api/v1/internal/apply", api.ApplyRequest{Type: byte(t), Body: b, Tokens: tokens}, nil)
		if err == nil {
			p.waitAppliedHeader(ctx, t, h)
			return nil
		}
		if api.CodeOf(err) != http.StatusServiceUnavailable || attempt >= 4 {
			return fromStatus(err)
		}
		select {
		case <-ctx.Done():
			return fromStatus(err)
		case <-time.After(time.Duration(attempt+1) * 100 * time.Millisecond):
		}
	}
}

// waitAppliedHeader waits (read-your-writes) until this replica has the
// index the leader stamped on its answer: the caller's next read here sees
// the command.
func (p *leaderLink) waitAppliedHeader(ctx context.Context, t raftfsm.Type, h http.Header) {
	idx, perr := strconv.ParseUint(h.Get(api.HeaderIndex), 10, 64)
	if perr != nil {
		p.cfg.Log.Warn("the leader's answer carries no applied index: this replica may not have the command yet", "type", t, "err", perr)
		return
	}
	if werr := p.store.FSM.WaitIndex(ctx, idx); werr != nil {
		p.cfg.Log.Warn("replica did not catch up with an applied command", "type", t, "index", idx, "err", werr)
	}
}

// fromStatus maps an API error answered by the leader back to the FSM's
// error kinds, by reason (never by message text), keeping the message.
func fromStatus(err error) error {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return err
	}
	kind := httpapi.KindOf(se.Status.Reason)
	if kind == nil {
		return err
	}
	return raftfsm.NewRuleError(kind, se.Status.Message)
}
