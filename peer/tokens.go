package peer

import (
	"context"
	"net/http"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/hostadmin"
	"github.com/svc-project/svc/raftfsm"
)

// HostAdmin is what root on this host may do through the admin socket.
func (p *Peer) HostAdmin() *hostadmin.Users { return p.hostAdmin }

// applyHostUser records or removes a user that root on this host named:
// on the leader through Raft, else through the leader's route for it (a
// peer may not propose user commands through the generic apply).
func (p *Peer) applyHostUser(ctx context.Context, req api.HostUserRequest) error {
	t, body := hostUserCommand(req, p.cfg.Name)
	if p.IsLeader() {
		_, err := p.store.ApplyCommand(ctx, t, body)
		return err
	}
	name, addr, err := p.WaitLeader(ctx)
	if err != nil {
		return err
	}
	if name == p.cfg.Name {
		_, err := p.store.ApplyCommand(ctx, t, body)
		return err
	}
	cl := &api.Client{BaseURL: p.links.PeerScheme() + "://" + addr, HTTP: p.peerHTTP}
	h, err := cl.DoHeader(ctx, http.MethodPost, api.HostUserPath, req, nil)
	if err != nil {
		return fromStatus(err)
	}
	p.waitAppliedHeader(ctx, t, h)
	return nil
}

// hostUserCommand is the command of a host's user request.
func hostUserCommand(req api.HostUserRequest, _ string) (raftfsm.Type, any) {
	if req.Remove {
		return raftfsm.TypeUserRemove, raftfsm.UserRemove{Name: req.User}
	}
	return raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: req.User, Admin: req.Admin, Time: time.Now().UTC().Truncate(time.Second)}
}
