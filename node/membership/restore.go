package membership

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/raftfsm"
)

// FormFromSnapshot makes this host's identity as the first peer of a
// cluster restored from a snapshot (svc agent --restore): the snapshot's
// cluster id, CA and cluster secret, and a key and certificate of its own.
// It returns the peer as the restored state must admit it.
func FormFromSnapshot(dir string, h Host, clusterID string, secret []byte, fb raftfsm.Fabric, now time.Time) (*fabric.Identity, raftfsm.PeerIdentity, error) {
	var self raftfsm.PeerIdentity
	ip := net.ParseIP(h.Addr)
	if ip == nil {
		return nil, self, fmt.Errorf("restore a cluster: %q is not an IP address", h.Addr)
	}
	aad := []byte(clusterID)
	caKeyDER, err := fabric.Unwrap(secret, fabric.PurposeCAKey, fb.CAKey, aad)
	if err != nil {
		return nil, self, fmt.Errorf("restore a cluster: the snapshot's secret does not open its CA key: %w", err)
	}
	caKey, err := fabric.ParseKeyDER(caKeyDER)
	if err != nil {
		return nil, self, fmt.Errorf("restore a cluster: the CA key: %w", err)
	}
	ca, err := x509.ParseCertificate(fb.CACert)
	if err != nil {
		return nil, self, fmt.Errorf("restore a cluster: the CA certificate: %w", err)
	}
	gossip, err := unwrapGossip(secret, clusterID, fb.GossipKeys)
	if err != nil {
		return nil, self, fmt.Errorf("restore a cluster: %w", err)
	}
	key, err := fabric.NewKey()
	if err != nil {
		return nil, self, err
	}
	certDER, err := fabric.Issue(ca, caKey, h.Name, []net.IP{ip}, key.Public(), now, fabric.CertLifetime)
	if err != nil {
		return nil, self, err
	}
	id, err := fabric.NewIdentity(dir, clusterID, h.Name, fb.CACert, key, certDER, secret)
	if err != nil {
		return nil, self, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, self, fmt.Errorf("restore a cluster: %w", err)
	}
	if err := fabric.SaveGossipKeys(dir, gossip); err != nil {
		return nil, self, err
	}
	trust, err := fabric.OpenTrust(filepath.Join(dir, fabric.FileTrust))
	if err != nil {
		return nil, self, err
	}
	if _, err := trust.Update(fabric.TrustSet{Members: map[string]string{h.Name: id.KeyID()}}); err != nil {
		return nil, self, err
	}
	self = raftfsm.PeerIdentity{Name: h.Name, KeyID: id.KeyID(), Addr: h.Addr, RaftAddr: h.RaftAddr}
	return id, self, nil
}
