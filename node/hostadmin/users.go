package hostadmin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/raftfsm"
)

// AdminTokenFile is where the first peer of a new cluster writes an admin token.
const AdminTokenFile = "admin.token"

// BootstrapTokenTTL is the lifetime of the token in admin.token: long enough
// to set a cluster up, after which 'svc admin token' makes new ones.
const BootstrapTokenTTL = 24 * time.Hour

// replicaWait bounds the wait for the local replica to show a user record.
const replicaWait = 10 * time.Second

// Config configures Users.
type Config struct {
	DataDir string
	FSM     *raftfsm.FSM
	// SigningKey is the cluster's token signing key.
	SigningKey func() []byte
	// Apply records or removes a user root on this host named, through the
	// leader (a peer may not propose user commands through the generic
	// apply), and returns once this replica has it.
	Apply func(ctx context.Context, req api.HostUserRequest) error
	// WaitPeersApplied waits a bounded time until every other live peer's
	// replica has applied index, and names those that did not in time.
	WaitPeersApplied func(ctx context.Context, index uint64) []string
	Log              *slog.Logger
}

// Users mints tokens for and removes the users root on this host names.
type Users struct{ cfg Config }

// New returns the host's user administration.
func New(cfg Config) *Users {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Users{cfg: cfg}
}

// MintToken records user (with the admin role or not) through the leader
// and signs a personal token for it (ttl 0: auth.PersonalTTL). It is what
// root on a peer's host gets through the admin socket.
func (u *Users) MintToken(ctx context.Context, user string, admin bool, ttl time.Duration) (string, *time.Time, error) {
	if ttl <= 0 {
		ttl = auth.PersonalTTL
	}
	if u.cfg.SigningKey() == nil {
		return "", nil, fmt.Errorf("this peer cannot sign tokens: %w", fabric.ErrNoSecret)
	}
	if err := u.cfg.Apply(ctx, api.HostUserRequest{User: user, Admin: admin}); err != nil {
		return "", nil, err
	}
	// The user's record must be in this replica before its token is used here.
	var rec raftfsm.User
	wctx, cancel := context.WithTimeout(ctx, replicaWait)
	defer cancel()
	if err := u.cfg.FSM.Wait(wctx, func() bool {
		r, ok := u.cfg.FSM.User(user)
		rec = r
		return ok && r.Admin == admin
	}); err != nil {
		return "", nil, err
	}
	role := auth.RoleUser
	if admin {
		role = auth.RoleAdmin
	}
	_, clusterID := u.cfg.FSM.Initialized()
	return auth.Sign(u.cfg.SigningKey(), clusterID, auth.Principal{Kind: auth.KindUser, Name: user, Role: role, UID: rec.UID}, ttl, time.Now())
}

// RemoveUser removes a user through the leader; its tokens stop working.
// It returns once every live peer's replica has applied the removal (its
// tokens are refused everywhere), or names the peers that did not in time.
func (u *Users) RemoveUser(ctx context.Context, user string) (lagging []string, err error) {
	if err := u.cfg.Apply(ctx, api.HostUserRequest{User: user, Remove: true}); err != nil {
		return nil, err
	}
	return u.cfg.WaitPeersApplied(ctx, u.cfg.FSM.Index()), nil
}

// WriteBootstrapToken gives the first peer of a new cluster an admin token
// in its data dir (mode 0600), for whoever sets the cluster up.
func (u *Users) WriteBootstrapToken(ctx context.Context) error {
	tok, _, err := u.MintToken(ctx, "admin", true, BootstrapTokenTTL)
	if err != nil {
		return err
	}
	path := filepath.Join(u.cfg.DataDir, AdminTokenFile)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	u.cfg.Log.Info("wrote an admin token", "path", path, "valid_for", BootstrapTokenTTL)
	return nil
}
