package raftfsm

import (
	"crypto/subtle"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// Fabric is the cluster's trust between peers as the state keeps it: the
// CA's certificate, the keys only peers may use (wrapped under the cluster
// secret, which never enters the state), the admitted peers, the removed
// keys and the join tokens (only their secrets' hashes).
type Fabric struct {
	// CACert is the cluster CA's certificate (DER).
	CACert []byte `json:"caCert"`
	// CAKey, SigningKey and GossipKeys are wrapped under the cluster secret.
	CAKey      []byte `json:"caKey"`
	SigningKey []byte `json:"signingKey"`
	GossipKeys []byte `json:"gossipKeys"`
	// GossipEpoch counts the changes of the gossip keyring.
	GossipEpoch uint64 `json:"gossipEpoch"`
	// Peers are the admitted peers by name.
	Peers map[string]*PeerIdentity `json:"peers"`
	// Removed are the keys of removed peers, by key id.
	Removed map[string]*PeerRemoval `json:"removed,omitempty"`
	// JoinTokens are by id.
	JoinTokens map[string]*JoinToken `json:"joinTokens,omitempty"`
	// TrustIndex is the index of the last change of Peers or Removed.
	TrustIndex uint64 `json:"trustIndex"`
}

// PeerIdentity is an admitted peer: its name, the key its certificates
// carry, and the addresses it proved (at its admission or since, with its
// certificate).
type PeerIdentity struct {
	Name       string    `json:"name"`
	KeyID      string    `json:"keyId"`
	Addr       string    `json:"addr"`
	RaftAddr   string    `json:"raftAddr"`
	AdmittedAt time.Time `json:"admittedAt"`
	// Token is the join token it came with ("" for the peer that formed
	// the cluster).
	Token string `json:"token,omitempty"`
	// Pending is a peer admitted with a join token that does not approve
	// on its own: it holds a certificate and replicates the state as a
	// non-voter, but gets no cluster secret (so no signing key, CA key or
	// sealed secret), no vote and no VMs until an admin approves it
	// (PeerApprove). Peers admitted before approvals existed are approved.
	Pending bool `json:"pending,omitempty"`
	// ApprovedBy and ApprovedAt say who approved a peer admitted pending.
	ApprovedBy string     `json:"approvedBy,omitempty"`
	ApprovedAt *time.Time `json:"approvedAt,omitempty"`
}

// PeerRemoval records a removed peer's key, which is never trusted again.
type PeerRemoval struct {
	Name  string    `json:"name"`
	KeyID string    `json:"keyId"`
	At    time.Time `json:"at"`
	By    string    `json:"by,omitempty"`
}

// JoinToken is a join token as the cluster keeps it: never its secret.
type JoinToken struct {
	ID         string    `json:"id"`
	SecretHash string    `json:"secretHash"`
	CreatedAt  time.Time `json:"createdAt"`
	CreatedBy  string    `json:"createdBy,omitempty"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Uses       int       `json:"uses"`
	Used       int       `json:"used"`
	UsedBy     []string  `json:"usedBy,omitempty"`
	Revoked    bool      `json:"revoked,omitempty"`
	// AutoApprove: the hosts it admits are approved at once (automation);
	// otherwise each is pending until an admin approves it.
	AutoApprove bool `json:"autoApprove,omitempty"`
}

// Limits of the fabric's records.
const (
	// MaxJoinTokens bounds the join tokens kept (expired ones are dropped
	// when a new one is made).
	MaxJoinTokens = 100
	// MaxJoinTokenUses bounds the hosts one token admits.
	MaxJoinTokenUses = 1000
	// MaxRemovedPeers bounds the removed keys kept (the oldest go first;
	// their certificates expired long before).
	MaxRemovedPeers = 1000
)

// JoinTokenCreate records a new join token.
type JoinTokenCreate struct {
	ID         string    `json:"id"`
	SecretHash string    `json:"secretHash"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Uses       int       `json:"uses"`
	CreatedBy  string    `json:"createdBy,omitempty"`
	Time       time.Time `json:"time"`
	// AutoApprove: see JoinToken.AutoApprove.
	AutoApprove bool `json:"autoApprove,omitempty"`
}

// JoinTokenRevoke revokes a join token.
type JoinTokenRevoke struct {
	ID string `json:"id"`
}

// PeerAdmit admits a host with a join token: the token must be known, not
// revoked, not expired at Time, not used up, and its secret's hash must
// match; the name and the key must be free.
type PeerAdmit struct {
	Name       string    `json:"name"`
	KeyID      string    `json:"keyId"`
	Addr       string    `json:"addr"`
	RaftAddr   string    `json:"raftAddr"`
	TokenID    string    `json:"tokenId"`
	SecretHash string    `json:"secretHash"`
	Time       time.Time `json:"time"`
}

// NodeRemove removes a peer from the cluster for good: its identity, its
// node record and its blob holdings go; its key is never trusted again. A
// node that still has VMs is not removed.
type NodeRemove struct {
	Name string    `json:"name"`
	By   string    `json:"by,omitempty"`
	Time time.Time `json:"time"`
}

// PeerApprove approves a peer admitted pending (an admin's).
type PeerApprove struct {
	Name string    `json:"name"`
	By   string    `json:"by,omitempty"`
	Time time.Time `json:"time"`
}

func (s *State) applyPeerApprove(index uint64, c PeerApprove) (any, error) {
	fb, err := s.fabric()
	if err != nil {
		return nil, err
	}
	p, ok := fb.Peers[c.Name]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q is not a peer of the cluster", c.Name)
	}
	if !p.Pending {
		return *p, nil // approved already: nothing changes
	}
	at := c.Time
	p.Pending, p.ApprovedBy, p.ApprovedAt = false, c.By, &at
	fb.TrustIndex = index
	return *p, nil
}

// PeerAddr records new addresses of a peer (proposed by the peer itself).
type PeerAddr struct {
	Name     string `json:"name"`
	Addr     string `json:"addr"`
	RaftAddr string `json:"raftAddr"`
}

// GossipKeysSet replaces the wrapped gossip keyring.
type GossipKeysSet struct {
	Keys []byte `json:"keys"`
}

func (s *State) fabric() (*Fabric, error) {
	if s.Fabric == nil {
		return nil, ruleErr(ErrConflict, "the cluster is not initialised yet")
	}
	return s.Fabric, nil
}

func (s *State) applyJoinTokenCreate(c JoinTokenCreate) (any, error) {
	fb, err := s.fabric()
	if err != nil {
		return nil, err
	}
	switch {
	case len(c.ID) != 16 || strings.Trim(c.ID, "0123456789abcdef") != "":
		return nil, ruleErr(ErrInvalid, "join token id must be 16 hex digits")
	case len(c.SecretHash) != 64:
		return nil, ruleErr(ErrInvalid, "join token secret hash must be 64 hex digits")
	case c.Uses < 1 || c.Uses > MaxJoinTokenUses:
		return nil, ruleErr(ErrInvalid, "a join token admits 1 to %d hosts", MaxJoinTokenUses)
	case !c.ExpiresAt.After(c.Time):
		return nil, ruleErr(ErrInvalid, "a join token must expire after it is made")
	}
	if _, ok := fb.JoinTokens[c.ID]; ok {
		return nil, ruleErr(ErrAlreadyExists, "join token %s exists", c.ID)
	}
	for id, t := range fb.JoinTokens {
		if !t.ExpiresAt.After(c.Time) {
			delete(fb.JoinTokens, id)
		}
	}
	if len(fb.JoinTokens) >= MaxJoinTokens {
		return nil, ruleErr(ErrConflict, "the cluster holds %d join tokens that have not expired, all it keeps: revoke some ('svc cluster join-token revoke')", MaxJoinTokens)
	}
	if fb.JoinTokens == nil {
		fb.JoinTokens = map[string]*JoinToken{}
	}
	t := &JoinToken{ID: c.ID, SecretHash: c.SecretHash, CreatedAt: c.Time, CreatedBy: c.CreatedBy, ExpiresAt: c.ExpiresAt, Uses: c.Uses, AutoApprove: c.AutoApprove}
	fb.JoinTokens[c.ID] = t
	return *t.clone(), nil
}

func (s *State) applyJoinTokenRevoke(c JoinTokenRevoke) (any, error) {
	fb, err := s.fabric()
	if err != nil {
		return nil, err
	}
	t, ok := fb.JoinTokens[c.ID]
	if !ok {
		return nil, ruleErr(ErrNotFound, "join token %q not found", c.ID)
	}
	t.Revoked = true
	return *t.clone(), nil
}

// joinSecret returns join token id if secretHash is its secret's: an
// error of kind ErrNotFound when the state has no such token, ErrInvalid
// when the secret is wrong.
func joinSecret(fb *Fabric, id, secretHash string) (*JoinToken, error) {
	t, ok := fb.JoinTokens[id]
	switch {
	case !ok:
		return nil, ruleErr(ErrNotFound, "join token %s is not one of this cluster's (or has expired and been dropped)", id)
	case subtle.ConstantTimeCompare([]byte(t.SecretHash), []byte(secretHash)) != 1:
		return nil, ruleErr(ErrInvalid, "join token %s: the secret is wrong", id)
	}
	return t, nil
}

// CheckJoinSecret checks a join token's id and secret hash against this
// replica, before anything is proposed: ErrNotFound when the replica does
// not know the token (it may lag the leader: catch up and ask again),
// ErrInvalid when the secret is wrong. The admission checks both again,
// with the rest, on the leader.
func (f *FSM) CheckJoinSecret(id, secretHash string) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fb, err := f.state.fabric()
	if err != nil {
		return err
	}
	_, err = joinSecret(fb, id, secretHash)
	return err
}

func (s *State) applyPeerAdmit(index uint64, c PeerAdmit) (any, error) {
	fb, err := s.fabric()
	if err != nil {
		return nil, err
	}
	if err := api.ValidateName("name", c.Name, api.MaxNameLen); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if c.KeyID == "" || c.RaftAddr == "" || c.Addr == "" {
		return nil, ruleErr(ErrInvalid, "a peer is admitted with its key and addresses")
	}
	t, err := joinSecret(fb, c.TokenID, c.SecretHash)
	if err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if p, ok := fb.Peers[c.Name]; ok && p.KeyID == c.KeyID && p.Token == c.TokenID && p.Addr == c.Addr && p.RaftAddr == c.RaftAddr {
		// The same host asks again with the same token (the answer to its
		// admission was lost): it is admitted already, and the token is
		// not used twice.
		return *p, nil
	}
	switch {
	case t.Revoked:
		return nil, ruleErr(ErrInvalid, "join token %s was revoked", c.TokenID)
	case !t.ExpiresAt.After(c.Time):
		return nil, ruleErr(ErrInvalid, "join token %s expired at %s", c.TokenID, t.ExpiresAt.UTC().Format(time.RFC3339))
	case t.Used >= t.Uses:
		return nil, ruleErr(ErrInvalid, "join token %s is used up: it admitted %d of %d hosts", c.TokenID, t.Used, t.Uses)
	}
	if _, ok := fb.Peers[c.Name]; ok {
		return nil, ruleErr(ErrAlreadyExists, "a peer named %q is a member of the cluster: a host takes its name only after 'svc node remove %s'", c.Name, c.Name)
	}
	if _, ok := fb.Removed[c.KeyID]; ok {
		return nil, ruleErr(ErrInvalid, "key %s belonged to a removed peer", c.KeyID)
	}
	for _, p := range fb.Peers {
		if p.KeyID == c.KeyID {
			return nil, ruleErr(ErrAlreadyExists, "peer %q holds this key", p.Name)
		}
	}
	t.Used++
	t.UsedBy = append(t.UsedBy, c.Name)
	p := &PeerIdentity{Name: c.Name, KeyID: c.KeyID, Addr: c.Addr, RaftAddr: c.RaftAddr, AdmittedAt: c.Time, Token: c.TokenID, Pending: !t.AutoApprove}
	fb.Peers[c.Name] = p
	fb.TrustIndex = index
	return *p, nil
}

func (s *State) applyNodeRemove(index uint64, c NodeRemove) (any, error) {
	fb, err := s.fabric()
	if err != nil {
		return nil, err
	}
	p, ok := fb.Peers[c.Name]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q is not a peer of the cluster", c.Name)
	}
	if vms := s.ix().nodeVMs[c.Name]; len(vms) > 0 {
		names := make([]string, 0, len(vms))
		for k := range vms {
			names = append(names, k)
		}
		slices.Sort(names)
		if len(names) > 5 {
			names = append(names[:5], "...")
		}
		return nil, ruleErr(ErrConflict, "node %q still has %d VMs (%s): delete them first", c.Name, len(vms), strings.Join(names, ", "))
	}
	delete(fb.Peers, c.Name)
	if fb.Removed == nil {
		fb.Removed = map[string]*PeerRemoval{}
	}
	fb.Removed[p.KeyID] = &PeerRemoval{Name: c.Name, KeyID: p.KeyID, At: c.Time, By: c.By}
	if len(fb.Removed) > MaxRemovedPeers {
		oldest := slices.SortedFunc(maps.Values(fb.Removed), func(a, b *PeerRemoval) int { return a.At.Compare(b.At) })
		for _, r := range oldest[:len(fb.Removed)-MaxRemovedPeers] {
			delete(fb.Removed, r.KeyID)
		}
	}
	fb.TrustIndex = index
	delete(s.Nodes, c.Name)
	for _, b := range s.Blobs {
		b.Holders = slices.DeleteFunc(b.Holders, func(h string) bool { return h == c.Name })
	}
	return nil, nil
}

func (s *State) applyPeerAddr(c PeerAddr) (any, error) {
	fb, err := s.fabric()
	if err != nil {
		return nil, err
	}
	p, ok := fb.Peers[c.Name]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q is not a peer of the cluster", c.Name)
	}
	if c.Addr == "" || c.RaftAddr == "" {
		return nil, ruleErr(ErrInvalid, "a peer's addresses must not be empty")
	}
	p.Addr, p.RaftAddr = c.Addr, c.RaftAddr
	return *p, nil
}

func (s *State) applyGossipKeysSet(c GossipKeysSet) (any, error) {
	fb, err := s.fabric()
	if err != nil {
		return nil, err
	}
	if len(c.Keys) == 0 {
		return nil, ruleErr(ErrInvalid, "the gossip keyring must not be empty")
	}
	fb.GossipKeys = slices.Clone(c.Keys)
	fb.GossipEpoch++
	return nil, nil
}

func (t *JoinToken) clone() *JoinToken {
	c := *t
	c.UsedBy = slices.Clone(t.UsedBy)
	return &c
}

func (f *Fabric) clone() *Fabric {
	c := *f
	c.Peers = make(map[string]*PeerIdentity, len(f.Peers))
	for k, p := range f.Peers {
		cp := *p
		c.Peers[k] = &cp
	}
	c.Removed = make(map[string]*PeerRemoval, len(f.Removed))
	for k, r := range f.Removed {
		cr := *r
		c.Removed[k] = &cr
	}
	c.JoinTokens = make(map[string]*JoinToken, len(f.JoinTokens))
	for k, t := range f.JoinTokens {
		c.JoinTokens[k] = t.clone()
	}
	return &c
}

// Fabric returns a copy of the cluster's fabric (false before Init).
func (f *FSM) Fabric() (Fabric, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.state.Fabric == nil {
		return Fabric{}, false
	}
	return *f.state.Fabric.clone(), true
}

// TrustIndex is the index of the last change of the admitted or removed
// peers (0 before Init).
func (f *FSM) TrustIndex() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.state.Fabric == nil {
		return 0
	}
	return f.state.Fabric.TrustIndex
}

// PeerIdentity returns an admitted peer.
func (f *FSM) PeerIdentity(name string) (PeerIdentity, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.state.Fabric == nil {
		return PeerIdentity{}, false
	}
	p, ok := f.state.Fabric.Peers[name]
	if !ok {
		return PeerIdentity{}, false
	}
	return *p, true
}

// JoinTokens lists the join tokens, newest first.
func (f *FSM) JoinTokens() []JoinToken {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []JoinToken
	if f.state.Fabric != nil {
		for _, t := range f.state.Fabric.JoinTokens {
			out = append(out, *t.clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out
}

// FabricVersion returns, cheaply, the index of the last change of the
// admitted or removed peers and the gossip keyring's epoch (ok false
// before Init).
func (f *FSM) FabricVersion() (trustIndex, gossipEpoch uint64, ok bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.state.Fabric == nil {
		return 0, 0, false
	}
	return f.state.Fabric.TrustIndex, f.state.Fabric.GossipEpoch, true
}
