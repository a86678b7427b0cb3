package membership

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/raftfsm"
)

// admitWait bounds how long an admission waits for this peer's replica.
const admitWait = 10 * time.Second

// Admit checks a join request and admits the host: the admission goes
// through the leader, which checks the token in the state (known, not
// revoked, not expired, not used up, its secret's hash) and that the name
// and key are free; then this peer certifies the host's key and answers
// everything a peer holds. Refusals are *fabric.Refusal.
func (m *Membership) Admit(ctx context.Context, req fabric.JoinRequest, from string) (fabric.JoinResponse, error) {
	if err := api.ValidateName("name", req.Name, api.MaxNameLen); err != nil {
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusBadRequest, "%v", err)
	}
	ip := net.ParseIP(req.Addr)
	if ip == nil {
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusBadRequest, "addr %q is not an IP address", req.Addr)
	}
	if h, _, err := net.SplitHostPort(req.RaftAddr); err != nil || net.ParseIP(h) == nil {
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusBadRequest, "raftAddr %q is not an IP address and port", req.RaftAddr)
	}
	if !fabric.ValidTokenID(req.TokenID) {
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusUnauthorized, "no valid join token")
	}
	pub, err := fabric.ParsePublicKey(req.PublicKey)
	if err != nil {
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusBadRequest, "%v", err)
	}
	keyID, err := fabric.KeyID(pub)
	if err != nil {
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusBadRequest, "%v", err)
	}
	if m.cfg.Identity.Secret() == nil {
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusServiceUnavailable, "peer %s awaits an admin's approval itself: join through another peer", m.cfg.Host.Name)
	}
	now := time.Now().UTC()
	ctx, cancel := context.WithTimeout(ctx, admitWait)
	defer cancel()
	hash := fabric.HashSecret(req.Secret)
	if err := m.checkSecret(ctx, req.TokenID, hash); err != nil {
		return fabric.JoinResponse{}, err
	}
	_, err = m.cfg.Proposer.Apply(ctx, raftfsm.TypePeerAdmit, raftfsm.PeerAdmit{
		Name: req.Name, KeyID: keyID, Addr: req.Addr, RaftAddr: req.RaftAddr,
		TokenID: req.TokenID, SecretHash: hash, Time: now,
	})
	switch {
	case errors.Is(err, raftfsm.ErrInvalid):
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusForbidden, "%v", err)
	case errors.Is(err, raftfsm.ErrAlreadyExists):
		return fabric.JoinResponse{}, fabric.Refuse(http.StatusConflict, "%v", err)
	case err != nil:
		return fabric.JoinResponse{}, err
	}
	var admitted raftfsm.PeerIdentity
	if err := m.cfg.FSM.Wait(ctx, func() bool {
		p, ok := m.cfg.FSM.PeerIdentity(req.Name)
		admitted = p
		return ok && p.KeyID == keyID
	}); err != nil {
		return fabric.JoinResponse{}, fmt.Errorf("the admission of %s did not reach this peer's replica: %w", req.Name, err)
	}
	caKey, err := m.caKey()
	if err != nil {
		return fabric.JoinResponse{}, err
	}
	id := m.cfg.Identity
	cert, err := fabric.Issue(id.CA, caKey, req.Name, []net.IP{ip}, pub, now, fabric.CertLifetime)
	if err != nil {
		return fabric.JoinResponse{}, err
	}
	fb, _ := m.cfg.FSM.Fabric()
	g, err := unwrapGossip(id.Secret(), id.ClusterID, fb.GossipKeys)
	if err != nil {
		return fabric.JoinResponse{}, err
	}
	resp := fabric.JoinResponse{ClusterID: id.ClusterID, Cert: cert, CA: id.CA.Raw, Gossip: g, Trust: trustSet(fb), Pending: admitted.Pending}
	if !admitted.Pending {
		// a pending host gets the secret only once an admin approves it
		resp.Secret = id.Secret()
	}
	if m.cfg.Pool != nil {
		for _, mem := range m.cfg.Pool.Members() {
			if mem.State == gossip.StateAlive {
				resp.Peers = append(resp.Peers, mem.GossipAddr)
			}
		}
	}
	return resp, nil
}

// checkSecret checks a join token's secret against this replica before
// anything is proposed: a request with an invented secret costs a lookup,
// never a Raft entry. A token this replica does not know yet (made a moment
// ago through the leader) is looked up again once the replica has caught
// up with the leader (round trips shared among callers).
func (m *Membership) checkSecret(ctx context.Context, id, hash string) error {
	err := m.cfg.FSM.CheckJoinSecret(id, hash)
	if errors.Is(err, raftfsm.ErrNotFound) && m.cfg.Sync != nil {
		sctx, cancel := context.WithTimeout(ctx, syncWait)
		serr := m.cfg.Sync(sctx)
		cancel()
		if serr != nil {
			return fmt.Errorf("check the join token against the leader's state: %w", serr)
		}
		err = m.cfg.FSM.CheckJoinSecret(id, hash)
	}
	switch {
	case errors.Is(err, raftfsm.ErrNotFound), errors.Is(err, raftfsm.ErrInvalid):
		return fabric.Refuse(http.StatusForbidden, "%v", err)
	case err != nil:
		return err
	}
	return nil
}

// syncWait bounds a catch-up with the leader for a token this replica does
// not know.
const syncWait = 5 * time.Second

// Standing answers a peer that asks whether it may rejoin: nil when its
// certificate is of an admitted peer, else a refusal that says why (a
// removed peer is told when and by whom).
func (m *Membership) Standing(_ context.Context, certs []*x509.Certificate) error {
	if len(certs) == 0 {
		return fabric.Refuse(http.StatusUnauthorized, "no peer certificate")
	}
	_, err := m.cfg.Identity.VerifyPeer(certs, m.cfg.Trust, time.Now())
	var rem *fabric.RemovedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rem):
		return fabric.Refuse(http.StatusForbidden, "%v", rem)
	}
	return fabric.Refuse(http.StatusForbidden, "%v", err)
}

// Join token bounds.
const (
	DefaultJoinTokenTTL = 24 * time.Hour
	MaxJoinTokenTTL     = 30 * 24 * time.Hour
)

// CreateJoinToken makes a join token valid for ttl that admits uses hosts,
// records it (the hash of its secret only) and returns the token.
func (m *Membership) CreateJoinToken(ctx context.Context, ttl time.Duration, uses int, autoApprove bool, by string) (string, raftfsm.JoinToken, error) {
	if ttl <= 0 {
		ttl = DefaultJoinTokenTTL
	}
	if ttl > MaxJoinTokenTTL || ttl < time.Second {
		return "", raftfsm.JoinToken{}, raftfsm.NewRuleError(raftfsm.ErrInvalid, fmt.Sprintf("a join token lives 1s to %s", MaxJoinTokenTTL))
	}
	if uses == 0 {
		uses = 1
	}
	tok, err := fabric.NewJoinToken(m.cfg.Identity.CAFingerprint())
	if err != nil {
		return "", raftfsm.JoinToken{}, err
	}
	now := time.Now().UTC().Truncate(time.Second)
	v, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypeJoinTokenCreate, raftfsm.JoinTokenCreate{
		ID: tok.ID, SecretHash: fabric.HashSecret(tok.Secret), ExpiresAt: now.Add(ttl), Uses: uses, CreatedBy: by, Time: now, AutoApprove: autoApprove,
	})
	if err != nil {
		return "", raftfsm.JoinToken{}, err
	}
	rec, _ := v.(raftfsm.JoinToken)
	return tok.String(), rec, nil
}

// RemoveNode removes a peer for good and then rotates the gossip key, so
// that the removed peer's copy of it opens nothing.
func (m *Membership) RemoveNode(ctx context.Context, name, by string) error {
	if _, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypeNodeRemove, raftfsm.NodeRemove{Name: name, By: by, Time: time.Now().UTC()}); err != nil {
		return err
	}
	m.cfg.Log.Info("removed a peer", "peer", name, "by", by)
	select {
	case m.rotate <- struct{}{}:
	default: // a rotation is due already
	}
	return nil
}

// rotateStepWait bounds the wait for every live peer at each step of a
// gossip key rotation.
const rotateStepWait = 30 * time.Second

// RotateGossipKey replaces the gossip key in three steps, each recorded
// through the leader and waited for until every live peer has installed
// it: the new key added, the new key used, the old keys removed. A peer
// that is down takes the keyring from the state when it is back.
func (m *Membership) RotateGossipKey(ctx context.Context) error {
	fb, ok := m.cfg.FSM.Fabric()
	if !ok {
		return errors.New("the cluster is not initialised yet")
	}
	id := m.cfg.Identity
	cur, err := unwrapGossip(id.Secret(), id.ClusterID, fb.GossipKeys)
	if err != nil {
		return err
	}
	fresh := make([]byte, 32)
	if _, err := rand.Read(fresh); err != nil {
		return err
	}
	primary := cur.Keys[cur.Primary]
	keys := append([][]byte{primary}, fresh)
	steps := []fabric.GossipKeys{{Keys: keys, Primary: 0}, {Keys: keys, Primary: 1}, {Keys: [][]byte{fresh}, Primary: 0}}
	for i, g := range steps {
		w, err := wrapGossip(id.Secret(), id.ClusterID, g)
		if err != nil {
			return err
		}
		if _, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypeGossipKeysSet, raftfsm.GossipKeysSet{Keys: w}); err != nil {
			return fmt.Errorf("gossip key rotation, step %d of 3: %w", i+1, err)
		}
		_, epoch, _ := m.cfg.FSM.FabricVersion()
		if lagging := m.waitKeys(ctx, epoch); len(lagging) > 0 {
			return fmt.Errorf("gossip key rotation stopped at step %d of 3: peers %v did not install the keyring in %s (run it again once they answer)", i+1, lagging, rotateStepWait)
		}
	}
	m.cfg.Log.Info("rotated the gossip key")
	return nil
}

// waitKeys waits until every live admitted peer reports keyring epoch
// epoch; it returns those that did not in time.
func (m *Membership) waitKeys(ctx context.Context, epoch uint64) []string {
	if m.cfg.Pool == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, rotateStepWait)
	defer cancel()
	for {
		changed := m.cfg.Pool.Changed()
		var lagging []string
		for _, mem := range m.cfg.Pool.Members() {
			if mem.State != gossip.StateAlive {
				continue
			}
			if _, ok := m.cfg.FSM.PeerIdentity(mem.Name); !ok {
				continue
			}
			if mem.Name == m.cfg.Host.Name {
				if m.KeyEpoch() < epoch {
					lagging = append(lagging, mem.Name)
				}
				continue
			}
			if mem.Report.KeyEpoch < epoch {
				lagging = append(lagging, mem.Name)
			}
		}
		if len(lagging) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			slices.Sort(lagging)
			return lagging
		case <-changed:
		case <-time.After(100 * time.Millisecond):
		}
	}
}
