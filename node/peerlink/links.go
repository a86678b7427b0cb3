package peerlink

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
)

// State is what the links read from the replica: the peers' recorded
// addresses, the peers the cluster admitted, the uploaded certificate.
type State interface {
	Node(name string) (raftfsm.NodeView, bool)
	PeerIdentity(name string) (raftfsm.PeerIdentity, bool)
	Cert() (raftfsm.Cert, bool)
}

// Config is what Links are made of.
type Config struct {
	// Name is this peer's; TLSAddr and APIAddr are where this peer
	// listens on its HTTPS and API ports.
	Name, TLSAddr, APIAddr string
	// Version is the svc this peer runs: its calls to other peers carry it
	// (User-Agent) and its command level (api.HeaderPeerLevel).
	Version string
	// Plain: peers call each other over plain HTTP (benchmarks only).
	Plain bool
	// Gate optionally refuses traffic to some addresses (tests).
	Gate netgate.Gate
	// Identity is this peer's in the fabric, Trust who it talks to.
	Identity *fabric.Identity
	Trust    *fabric.Trust
	State    State
	// Member returns what gossip knows of a peer (false before gossip
	// runs).
	Member func(name string) (gossip.Member, bool)
	// NotMember is called when a peer refused this one as no member of
	// the cluster (this peer's trust set may be out of date).
	NotMember func()
}

// Links are one peer's ways to the others.
type Links struct{ cfg Config }

// New returns the links of a peer.
func New(cfg Config) *Links { return &Links{cfg: cfg} }

// Dialer dials other peers' TCP ports, through the gate in tests.
func Dialer(g netgate.Gate) fabric.DialFunc {
	return netgate.DialContext(g, &net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second})
}

// Dial dials other peers' TCP ports.
func (l *Links) Dial() fabric.DialFunc { return Dialer(l.cfg.Gate) }

// RaftTLS is the Raft transport's authentication (nil: plain TCP).
func (l *Links) RaftTLS() *raftstore.PeerTLS {
	if l.cfg.Plain {
		return nil
	}
	id, trust := l.cfg.Identity, l.cfg.Trust
	return &raftstore.PeerTLS{
		Server: id.PeerServerConfig(trust), Client: id.PeerClientConfig(trust),
		Check: func(cs *tls.ConnectionState) error {
			_, err := id.PeerOf(cs, trust)
			return err
		},
		Changed: trust.Changed,
		Refused: func(err error) {
			if errors.Is(err, fabric.ErrNotMember) && l.cfg.NotMember != nil {
				l.cfg.NotMember()
			}
		},
	}
}

// PeerTransport calls other peers over the fabric: TLS 1.3 to their HTTPS
// port with this peer's certificate, checking theirs.
func (l *Links) PeerTransport() http.RoundTripper {
	tr := &http.Transport{
		DialContext:         l.Dial(),
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}
	if l.cfg.Plain {
		return versioned{version: l.cfg.Version, next: plainPeer{name: l.cfg.Name, next: tr}}
	}
	tr.TLSClientConfig = l.cfg.Identity.PeerClientConfig(l.cfg.Trust)
	return versioned{version: l.cfg.Version, next: tr}
}

// versioned says which svc calls: its version and command level, so that
// a peer of another release can tell (docs/operations.md#upgrades-one-host-at-a-time).
type versioned struct {
	version string
	next    http.RoundTripper
}

func (t versioned) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", "svc/"+t.version)
	r.Header.Set(api.HeaderPeerLevel, strconv.Itoa(raftfsm.Level))
	return t.next.RoundTrip(r)
}

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
func (l *Links) PeerScheme() string {
	if l.cfg.Plain {
		return "http"
	}
	return "https"
}

// PeerAddr returns where other peers call peer name (its HTTPS port; its
// API port with PlainPeers), "" when unknown.
func (l *Links) PeerAddr(name string) string {
	if l.cfg.Plain {
		return l.APIAddr(name)
	}
	if name == l.cfg.Name {
		return l.cfg.TLSAddr
	}
	if m, ok := l.cfg.Member(name); ok && m.Report.TLSPort > 0 && m.Report.Addr != "" {
		return net.JoinHostPort(m.Report.Addr, strconv.Itoa(m.Report.TLSPort))
	}
	if n, ok := l.cfg.State.Node(name); ok && n.TLSPort > 0 && n.Addr != "" {
		return net.JoinHostPort(n.Addr, strconv.Itoa(n.TLSPort))
	}
	return ""
}

// APIAddr returns peer name's API address (host:port), "" when unknown.
func (l *Links) APIAddr(name string) string {
	if name == l.cfg.Name {
		return l.cfg.APIAddr
	}
	if m, ok := l.cfg.Member(name); ok && m.Report.APIAddr != "" {
		return m.Report.APIAddr
	}
	if n, ok := l.cfg.State.Node(name); ok {
		return n.APIAddr
	}
	return ""
}

// URL is the base URL of peer name's fabric endpoint ("" when unknown).
func (l *Links) URL(name string) string {
	addr := l.PeerAddr(name)
	if addr == "" {
		return ""
	}
	return l.PeerScheme() + "://" + addr
}

// PeerOf returns the name of the peer that sent r over the fabric: a TLS
// connection to this peer's HTTPS port for the peers' server name, with a
// certificate of a peer the cluster admitted and has not removed.
func (l *Links) PeerOf(r *http.Request) (string, bool) {
	if l.cfg.Plain {
		name := r.Header.Get(api.HeaderPlainPeer)
		_, ok := l.cfg.State.PeerIdentity(name)
		return name, ok && name != ""
	}
	if r.TLS == nil || r.TLS.ServerName != fabric.PeerServerName {
		return "", false
	}
	name, err := l.cfg.Identity.PeerOf(r.TLS, l.cfg.Trust)
	if err != nil {
		return "", false
	}
	// A peer that awaits an admin's approval is not one for the API's
	// peer routes: no blob, relay, forward or write goes through it.
	if p, ok := l.cfg.State.PeerIdentity(name); !ok || p.Pending {
		return name, false
	}
	return name, true
}

// HTTPSConfig serves the HTTPS port: to a client that asks for the peers'
// server name, the peer's certificate, requiring and checking the
// client's; to everyone else the uploaded certificate (read from the
// replica at each handshake, so a new one takes effect on every peer
// without a restart), or the peer's certificate of the cluster's CA until
// one is uploaded ('svc cluster ca' prints the CA).
func (l *Links) HTTPSConfig() *tls.Config {
	var peers *tls.Config
	if !l.cfg.Plain {
		peers = l.cfg.Identity.PeerServerConfig(l.cfg.Trust)
	}
	var mu sync.Mutex
	var cachedPEM string
	var cached *tls.Certificate
	users := &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			c, ok := l.cfg.State.Cert()
			if !ok {
				return l.cfg.Identity.Certificate(), nil
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
			if h.ServerName == fabric.PeerServerName && peers != nil {
				return peers, nil
			}
			return users, nil
		},
	}
}
