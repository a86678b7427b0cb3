package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

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
	if _, err := p.Apply(ctx, raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: user, Admin: admin, Time: time.Now().UTC().Truncate(time.Second)}); err != nil {
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
	return auth.Sign(p.FSM().SigningKey(), clusterID, auth.Principal{Kind: auth.KindUser, Name: user, Role: role, UID: rec.UID}, ttl, time.Now())
}

// RemoveUser removes a user through the leader; its tokens stop working.
// It returns once every live peer's replica has applied the removal (its
// tokens are refused everywhere), or names the peers that did not in time.
func (p *Peer) RemoveUser(ctx context.Context, user string) (lagging []string, err error) {
	if _, err := p.Apply(ctx, raftfsm.TypeUserRemove, raftfsm.UserRemove{Name: user}); err != nil {
		return nil, err
	}
	return p.WaitPeersApplied(ctx, p.FSM().Index()), nil
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

// peerTokens keeps this peer's short-lived token for internal calls.
type peerTokens struct {
	mu  sync.Mutex
	tok string
	exp time.Time
}

// PeerToken returns a token that proves to other peers that this peer holds
// the cluster key, renewed before it expires.
func (p *Peer) PeerToken() (string, error) {
	p.tokens.mu.Lock()
	defer p.tokens.mu.Unlock()
	if p.tokens.tok != "" && time.Until(p.tokens.exp) > auth.PeerTTL/2 {
		return p.tokens.tok, nil
	}
	ok, clusterID := p.FSM().Initialized()
	if !ok {
		return "", errors.New("the cluster is not initialised yet")
	}
	tok, exp, err := auth.Sign(p.FSM().SigningKey(), clusterID, auth.Principal{Kind: auth.KindPeer, Name: p.cfg.Name}, auth.PeerTTL, time.Now())
	if err != nil {
		return "", err
	}
	p.tokens.tok, p.tokens.exp = tok, *exp
	return tok, nil
}

// peerAuth adds this peer's token to requests to other peers.
type peerAuth struct {
	base http.RoundTripper
	p    *Peer
}

func (a peerAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := a.p.PeerToken()
	if err != nil {
		return nil, fmt.Errorf("peer token: %w", err)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return a.base.RoundTrip(r)
}

// tlsConfig serves the cluster's uploaded certificate, read from the replica
// at each handshake (parsed once per certificate), so a new one takes effect
// on every peer without a restart.
func (p *Peer) tlsConfig() *tls.Config {
	var mu sync.Mutex
	var cachedPEM string
	var cached *tls.Certificate
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, ok := p.FSM().Cert()
			if !ok {
				return nil, errors.New("no certificate uploaded yet (POST /api/v1/upload/cert)")
			}
			mu.Lock()
			defer mu.Unlock()
			if c.CertPEM != cachedPEM {
				pair, err := tls.X509KeyPair([]byte(c.CertPEM), []byte(c.KeyPEM))
				if err != nil {
					return nil, fmt.Errorf("the uploaded certificate: %w", err)
				}
				if len(pair.Certificate) > 0 {
					pair.Leaf, _ = x509.ParseCertificate(pair.Certificate[0])
				}
				cachedPEM, cached = c.CertPEM, &pair
			}
			return cached, nil
		},
	}
}

// handOutAdminToken writes the first admin token, once this peer has made
// the cluster.
func (p *Peer) handOutAdminToken() {
	if err := p.writeAdminToken(p.ctx); err != nil {
		p.cfg.Log.Error("cannot write the admin token", "err", err)
	}
}
