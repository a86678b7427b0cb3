package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/node/membership"
	"github.com/svc-project/svc/raftstore"
)

// ErrNotAMember is returned by Start on a host that is not a peer of a
// cluster and was given neither a cluster to form nor a join token.
var ErrNotAMember = errors.New("this host is not a peer of any cluster: form one (--bootstrap-expect 1, or --dev) or join one (--join ADDR --join-token TOKEN, a token from 'svc cluster join-token create')")

// fabricDir is where a peer keeps its identity.
func fabricDir(dataDir string) string { return filepath.Join(dataDir, "fabric") }

// netHost is who this peer is on the network.
func (p *Peer) netHost() membership.Host {
	return membership.Host{Name: p.cfg.Name, Addr: p.cfg.Bind, RaftAddr: p.raftAddr()}
}

func (p *Peer) raftAddr() string {
	if p.store != nil {
		return p.store.Addr()
	}
	return p.raftL.Addr().String()
}

// dialer dials other peers' TCP ports, through the gate in tests.
func (p *Peer) dialer() fabric.DialFunc {
	return netgate.DialContext(p.cfg.Gate, &net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second})
}

// openIdentity loads this peer's identity, or makes one: it forms a new
// cluster (BootstrapExpect 1) or joins one with the join token. It reports
// whether the identity was there (the peer restarted: it must ask the
// cluster whether it may come back, as a removed peer may not).
func (p *Peer) openIdentity() (restarted bool, err error) {
	dir := fabricDir(p.cfg.DataDir)
	id, err := fabric.LoadIdentity(dir)
	restarted = err == nil
	switch {
	case err == nil:
		if p.cfg.JoinToken != "" {
			p.cfg.Log.Info("this peer is a member of its cluster already; the join token is not used", "cluster", id.ClusterID)
		}
	case !errors.Is(err, fabric.ErrNoIdentity):
		return false, err
	case hasRaftState(p.cfg.DataDir):
		return false, fmt.Errorf("data dir %s holds Raft state but no cluster identity: an svc from before peers authenticated each other made it; form a new cluster in an empty data dir", p.cfg.DataDir)
	case p.cfg.JoinToken != "":
		jctx, cancel := context.WithTimeout(p.ctx, p.cfg.JoinTimeout+time.Minute)
		defer cancel()
		id, p.seedPeers, err = membership.Join(jctx, membership.JoinConfig{
			Dir: dir, Host: p.netHost(), Addrs: p.cfg.Join, Token: p.cfg.JoinToken, Dial: p.dialer(), Timeout: p.cfg.JoinTimeout, Log: p.cfg.Log,
		})
		if err != nil {
			return false, fmt.Errorf("join the cluster: %w", err)
		}
		p.cfg.Log.Info("joined the cluster: admitted with the join token", "cluster", id.ClusterID)
	case p.cfg.BootstrapExpect == 1:
		if id, err = membership.Form(dir, p.netHost(), time.Now()); err != nil {
			return false, err
		}
		p.cfg.Log.Info("formed a new cluster", "cluster", id.ClusterID, "ca", id.CAFingerprint())
	default:
		return false, ErrNotAMember
	}
	p.id = id
	if p.trust, err = fabric.OpenTrust(filepath.Join(dir, fabric.FileTrust)); err != nil {
		return false, err
	}
	return restarted, nil
}

func hasRaftState(dataDir string) bool {
	st, err := os.Stat(filepath.Join(dataDir, "raft", "raft.db"))
	return err == nil && st.Size() > 0
}

// raftTLS is the Raft transport's authentication (nil: plain TCP).
func (p *Peer) raftTLS() *raftstore.PeerTLS {
	if p.cfg.PlainPeers {
		return nil
	}
	return &raftstore.PeerTLS{
		Server: p.id.PeerServerConfig(p.trust), Client: p.id.PeerClientConfig(p.trust),
		Check: func(cs *tls.ConnectionState) error {
			_, err := p.id.PeerOf(cs, p.trust)
			return err
		},
		Changed: p.trust.Changed,
		Refused: func(err error) {
			if errors.Is(err, fabric.ErrNotMember) {
				p.standing.RefreshTrustSoon()
			}
		},
	}
}

// peerTransport calls other peers over the fabric: TLS 1.3 to their HTTPS
// port with this peer's certificate, checking theirs.
func (p *Peer) peerTransport() http.RoundTripper {
	tr := &http.Transport{
		DialContext:         p.dialer(),
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	if p.cfg.PlainPeers {
		return plainPeer{name: p.cfg.Name, next: tr}
	}
	tr.TLSClientConfig = p.id.PeerClientConfig(p.trust)
	return tr
}

// PeerTransport is how the API calls other peers (forwarding, streaming
// blobs).
func (p *Peer) PeerTransport() http.RoundTripper { return p.peerTransport() }

// plainPeer names the calling peer in a header, on a cluster running with
// PlainPeers (benchmarks only).
type plainPeer struct {
	name string
	next http.RoundTripper
}

func (t plainPeer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(api.HeaderPlainPeer, t.name)
	return t.next.RoundTrip(r)
}

// PeerScheme is the scheme of peer-to-peer calls.
func (p *Peer) PeerScheme() string {
	if p.cfg.PlainPeers {
		return "http"
	}
	return "https"
}

// PeerAddr returns where other peers call peer name (its HTTPS port; its
// API port with PlainPeers), "" when unknown.
func (p *Peer) PeerAddr(name string) string {
	if p.cfg.PlainPeers {
		return p.apiAddrOf(name)
	}
	if name == p.cfg.Name {
		return p.TLSAddr()
	}
	if m, ok := p.gossip.Member(name); ok && m.Report.TLSPort > 0 && m.Report.Addr != "" {
		return net.JoinHostPort(m.Report.Addr, strconv.Itoa(m.Report.TLSPort))
	}
	if n, ok := p.FSM().Node(name); ok && n.TLSPort > 0 && n.Addr != "" {
		return net.JoinHostPort(n.Addr, strconv.Itoa(n.TLSPort))
	}
	return ""
}

// peerURL is the base URL of peer name's fabric endpoint ("" when unknown).
func (p *Peer) peerURL(name string) string {
	addr := p.PeerAddr(name)
	if addr == "" {
		return ""
	}
	return p.PeerScheme() + "://" + addr
}

// PeerOf returns the name of the peer that sent r over the fabric: a TLS
// connection to this peer's HTTPS port for the peers' server name, with a
// certificate of a peer the cluster admitted and has not removed.
func (p *Peer) PeerOf(r *http.Request) (string, bool) {
	if p.cfg.PlainPeers {
		name := r.Header.Get(api.HeaderPlainPeer)
		_, ok := p.FSM().PeerIdentity(name)
		return name, ok && name != ""
	}
	if r.TLS == nil || r.TLS.ServerName != fabric.PeerServerName {
		return "", false
	}
	name, err := p.id.PeerOf(r.TLS, p.trust)
	return name, err == nil
}

// httpsConfig serves the HTTPS port: to a client that asks for the peers'
// server name, the peer's certificate, requiring and checking the
// client's; to everyone else the uploaded certificate (read from the
// replica at each handshake, so a new one takes effect on every peer
// without a restart), or the peer's certificate of the cluster's CA until
// one is uploaded ('svc cluster ca' prints the CA).
func (p *Peer) httpsConfig() *tls.Config {
	peers := p.id.PeerServerConfig(p.trust)
	var mu sync.Mutex
	var cachedPEM string
	var cached *tls.Certificate
	users := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, ok := p.FSM().Cert()
			if !ok {
				return p.id.Certificate(), nil
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
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			if h.ServerName == fabric.PeerServerName && !p.cfg.PlainPeers {
				return peers, nil
			}
			return users, nil
		},
	}
}
