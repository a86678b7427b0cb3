package node

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi/auth"
	"github.com/svc-project/svc/raftfsm"
)

// AdminTokenFile is where the first peer of a new cluster writes an admin token.
const AdminTokenFile = "admin.token"

// BootstrapTokenTTL is the lifetime of the token in admin.token: long enough
// to set a cluster up, after which 'svc admin token' makes new ones.
const BootstrapTokenTTL = 24 * time.Hour

// MintUserToken records user (with the admin role or not) through the leader
// and signs a personal token for it. It is what root on a peer's host gets
// through the admin socket.
func (p *Peer) MintUserToken(ctx context.Context, user string, admin bool, ttl time.Duration) (string, *time.Time, error) {
	if ttl <= 0 {
		ttl = auth.PersonalTTL
	}
	if err := p.applyHostUser(ctx, api.HostUserRequest{User: user, Admin: admin}); err != nil {
		return "", nil, err
	}
	// The user's record must be in this replica before its token is used here.
	var rec raftfsm.User
	if err := p.waitFor(ctx, func() bool {
		u, ok := p.FSM().User(user)
		rec = u
		return ok && u.Admin == admin
	}); err != nil {
		return "", nil, err
	}
	role := auth.RoleUser
	if admin {
		role = auth.RoleAdmin
	}
	_, clusterID := p.FSM().Initialized()
	return auth.Sign(p.member.SigningKey(), clusterID, auth.Principal{Kind: auth.KindUser, Name: user, Role: role, UID: rec.UID}, ttl, time.Now())
}

// RemoveUser removes a user through the leader; its tokens stop working.
// It returns once every live peer's replica has applied the removal (its
// tokens are refused everywhere), or names the peers that did not in time.
func (p *Peer) RemoveUser(ctx context.Context, user string) (lagging []string, err error) {
	if err := p.applyHostUser(ctx, api.HostUserRequest{User: user, Remove: true}); err != nil {
		return nil, err
	}
	return p.WaitPeersApplied(ctx, p.FSM().Index()), nil
}

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
	cl := &api.Client{BaseURL: p.PeerScheme() + "://" + addr, HTTP: p.peerHTTP}
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

// waitFor waits for the replica to satisfy cond, bounded by ctx and 10 s.
func (p *Peer) waitFor(ctx context.Context, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return p.FSM().Wait(ctx, cond)
}

// writeAdminToken gives the first peer of a new cluster an admin token in
// its data dir (mode 0600), for whoever sets the cluster up.
func (p *Peer) writeAdminToken(ctx context.Context) error {
	tok, _, err := p.MintUserToken(ctx, "admin", true, BootstrapTokenTTL)
	if err != nil {
		return err
	}
	path := filepath.Join(p.cfg.DataDir, AdminTokenFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	p.cfg.Log.Info("wrote an admin token", "path", path, "valid_for", BootstrapTokenTTL)
	return nil
}

// handOutAdminToken writes the first admin token, once this peer has made
// the cluster.
func (p *Peer) handOutAdminToken() {
	if err := p.writeAdminToken(p.ctx); err != nil {
		p.cfg.Log.Error("cannot write the admin token", "err", err)
	}
}
