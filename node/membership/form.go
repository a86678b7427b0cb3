package membership

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/raftfsm"
)

// fileInit holds, on the peer that formed a cluster, the Init its first
// leader term proposes; it goes once the state has it.
const fileInit = "init.json"

// Host is who a peer is on the network: its name, its IP and its Raft
// address.
type Host struct {
	Name     string
	Addr     string
	RaftAddr string
}

// Form makes the identity of a new cluster in dir: a CA, the cluster
// secret, this peer's key and certificate, the token signing key and the
// gossip key, and the Init that records them (wrapped) in the state.
func Form(dir string, h Host, now time.Time) (*fabric.Identity, error) {
	ip := net.ParseIP(h.Addr)
	if ip == nil {
		return nil, fmt.Errorf("form a cluster: %q is not an IP address", h.Addr)
	}
	idb := make([]byte, 8)
	if _, err := rand.Read(idb); err != nil {
		return nil, err
	}
	clusterID := hex.EncodeToString(idb)
	caDER, caKey, err := fabric.NewCA(clusterID, now)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	secret, err := fabric.NewSecret()
	if err != nil {
		return nil, err
	}
	key, err := fabric.NewKey()
	if err != nil {
		return nil, err
	}
	certDER, err := fabric.Issue(ca, caKey, h.Name, []net.IP{ip}, key.Public(), now, fabric.CertLifetime)
	if err != nil {
		return nil, err
	}
	id, err := fabric.NewIdentity(dir, clusterID, h.Name, caDER, key, certDER, secret)
	if err != nil {
		return nil, err
	}
	seed := make([]byte, ed25519.SeedSize)
	gkey := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		return nil, err
	}
	if _, err := rand.Read(gkey); err != nil {
		return nil, err
	}
	gossip := fabric.GossipKeys{Keys: [][]byte{gkey}}
	caKeyDER, err := fabric.MarshalKeyDER(caKey)
	if err != nil {
		return nil, err
	}
	init := raftfsm.Init{ClusterID: clusterID, Time: now.UTC(), CACert: caDER,
		First: raftfsm.PeerIdentity{Name: h.Name, KeyID: id.KeyID(), Addr: h.Addr, RaftAddr: h.RaftAddr}}
	aad := []byte(clusterID)
	if init.CAKey, err = fabric.Wrap(secret, fabric.PurposeCAKey, caKeyDER, aad); err != nil {
		return nil, err
	}
	if init.SigningKey, err = fabric.Wrap(secret, fabric.PurposeSigningKey, seed, aad); err != nil {
		return nil, err
	}
	if init.GossipKeys, err = wrapGossip(secret, clusterID, gossip); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("form a cluster: %w", err)
	}
	b, err := json.Marshal(init)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, fileInit), b, 0o600); err != nil {
		return nil, fmt.Errorf("form a cluster: %w", err)
	}
	if err := fabric.SaveGossipKeys(dir, gossip); err != nil {
		return nil, err
	}
	trust, err := fabric.OpenTrust(filepath.Join(dir, fabric.FileTrust))
	if err != nil {
		return nil, err
	}
	if _, err := trust.Update(fabric.TrustSet{Members: map[string]string{h.Name: id.KeyID()}}); err != nil {
		return nil, err
	}
	if err := id.Save(); err != nil { // last: the identity is whole once saved
		return nil, err
	}
	return id, nil
}

func wrapGossip(secret []byte, clusterID string, g fabric.GossipKeys) ([]byte, error) {
	b, err := json.Marshal(g)
	if err != nil {
		return nil, err
	}
	return fabric.Wrap(secret, fabric.PurposeGossipKeys, b, []byte(clusterID))
}

func unwrapGossip(secret []byte, clusterID string, wrapped []byte) (fabric.GossipKeys, error) {
	var g fabric.GossipKeys
	b, err := fabric.Unwrap(secret, fabric.PurposeGossipKeys, wrapped, []byte(clusterID))
	if err != nil {
		return g, fmt.Errorf("gossip keys: %w", err)
	}
	if err := json.Unmarshal(b, &g); err != nil {
		return g, fmt.Errorf("gossip keys: %w", err)
	}
	return g, g.Validate()
}

// PendingInit reads the Init a peer that formed a cluster still has to
// propose (false when there is none).
func PendingInit(dir string) (raftfsm.Init, bool) {
	var init raftfsm.Init
	b, err := os.ReadFile(filepath.Join(dir, fileInit))
	if err != nil || json.Unmarshal(b, &init) != nil {
		return init, false
	}
	return init, true
}

// JoinConfig is what a new host joins with.
type JoinConfig struct {
	Dir   string
	Host  Host
	Addrs []string // gossip addresses of peers
	Token string
	Dial  fabric.DialFunc
	// Timeout bounds the tries; refusals end them at once.
	Timeout time.Duration
	Log     *slog.Logger
}

// Join asks the cluster to admit this host with the token, trying each
// address (again, with backoff, while none answers), and keeps what the
// cluster answers in dir. A refusal (bad, expired, used or revoked token,
// a taken name, a peer of another cluster) ends it at once.
func Join(ctx context.Context, jc JoinConfig) (*fabric.Identity, []string, error) {
	tok, err := fabric.ParseJoinToken(jc.Token)
	if err != nil {
		return nil, nil, err
	}
	if len(jc.Addrs) == 0 {
		return nil, nil, errors.New("a join token needs --join: the gossip address of a peer of the cluster")
	}
	key, err := fabric.NewKey()
	if err != nil {
		return nil, nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, nil, err
	}
	req := fabric.JoinRequest{Name: jc.Host.Name, Addr: jc.Host.Addr, RaftAddr: jc.Host.RaftAddr, PublicKey: pub}
	deadline := time.Now().Add(jc.Timeout)
	backoff := 200 * time.Millisecond
	var resp fabric.JoinResponse
	for attempt := 1; ; attempt++ {
		var errs []error
		ok := false
		for _, addr := range jc.Addrs {
			resp, err = fabric.Join(ctx, jc.Dial, addr, tok, req)
			if err == nil {
				ok = true
				break
			}
			if errors.Is(err, fabric.ErrRefused) || errors.Is(err, fabric.ErrOtherCluster) {
				return nil, nil, fmt.Errorf("join through %s: %w", addr, err)
			}
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("could not join after %d attempts over %s: %w", attempt, jc.Timeout, errors.Join(errs...))
		}
		jc.Log.Warn("join failed, retrying", "attempt", attempt, "err", errors.Join(errs...))
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	if fabric.Fingerprint(resp.CA) != tok.CA {
		return nil, nil, fmt.Errorf("join: %w: it answered with another CA", fabric.ErrOtherCluster)
	}
	id, err := fabric.NewIdentity(jc.Dir, resp.ClusterID, jc.Host.Name, resp.CA, key, resp.Cert, resp.Secret)
	if err != nil {
		return nil, nil, fmt.Errorf("join: the cluster's answer: %w", err)
	}
	if err := os.MkdirAll(jc.Dir, 0o700); err != nil {
		return nil, nil, err
	}
	if err := fabric.SaveGossipKeys(jc.Dir, resp.Gossip); err != nil {
		return nil, nil, err
	}
	trust, err := fabric.OpenTrust(filepath.Join(jc.Dir, fabric.FileTrust))
	if err != nil {
		return nil, nil, err
	}
	if _, err := trust.Update(resp.Trust); err != nil {
		return nil, nil, err
	}
	if err := id.Save(); err != nil {
		return nil, nil, err
	}
	return id, resp.Peers, nil
}
