package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
// cluster (BootstrapExpect 1) or joins one with the join token. A peer
// restarted with its identity first asks the cluster whether it may come
// back (a removed peer may not).
func (p *Peer) openIdentity() error {
	dir := fabricDir(p.cfg.DataDir)
	id, err := fabric.LoadIdentity(dir)
	restarted := err == nil
	switch {
	case err == nil:
		if p.cfg.JoinToken != "" {
			p.cfg.Log.Info("this peer is a member of its cluster already; the join token is not used", "cluster", id.ClusterID)
		}
	case !errors.Is(err, fabric.ErrNoIdentity):
		return err
	case hasRaftState(p.cfg.DataDir):
		return fmt.Errorf("data dir %s holds Raft state but no cluster identity: an svc from before peers authenticated each other made it; form a new cluster in an empty data dir", p.cfg.DataDir)
	case p.cfg.JoinToken != "":
		jctx, cancel := context.WithTimeout(p.ctx, p.cfg.JoinTimeout+time.Minute)
		defer cancel()
		id, p.seedPeers, err = membership.Join(jctx, membership.JoinConfig{
			Dir: dir, Host: p.netHost(), Addrs: p.cfg.Join, Token: p.cfg.JoinToken, Dial: p.dialer(), Timeout: p.cfg.JoinTimeout, Log: p.cfg.Log,
		})
		if err != nil {
			return fmt.Errorf("join the cluster: %w", err)
		}
		p.cfg.Log.Info("joined the cluster: admitted with the join token", "cluster", id.ClusterID)
	case p.cfg.BootstrapExpect == 1:
		if id, err = membership.Form(dir, p.netHost(), time.Now()); err != nil {
			return err
		}
		p.cfg.Log.Info("formed a new cluster", "cluster", id.ClusterID, "ca", id.CAFingerprint())
	default:
		return ErrNotAMember
	}
	p.id = id
	if p.trust, err = fabric.OpenTrust(filepath.Join(dir, fabric.FileTrust)); err != nil {
		return err
	}
	if restarted {
		return p.checkStanding()
	}
	return nil
}

func hasRaftState(dataDir string) bool {
	st, err := os.Stat(filepath.Join(dataDir, "raft", "raft.db"))
	return err == nil && st.Size() > 0
}

// standingWait bounds the restart's question to the cluster.
const standingWait = 10 * time.Second

// checkStanding asks the peers this one knows whether it may come back: a
// removed peer is told so, and does not start. When none answers, it
// starts (the cluster may be down with it).
func (p *Peer) checkStanding() error {
	addrs := slices.Clone(p.cfg.Join)
	for _, a := range p.loadPeers() {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if p.gossip != nil {
		for _, m := range p.gossip.Members() {
			if m.Name != p.cfg.Name && !slices.Contains(addrs, m.GossipAddr) {
				addrs = append(addrs, m.GossipAddr)
			}
		}
	}
	ctx, cancel := context.WithTimeout(p.ctx, standingWait)
	defer cancel()
	for _, a := range addrs {
		actx, acancel := context.WithTimeout(ctx, 3*time.Second)
		err := p.id.Standing(actx, p.dialer(), a)
		acancel()
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fabric.ErrRefused):
			return fmt.Errorf("the cluster refuses this peer (asked %s): %w", a, err)
		case errors.Is(err, fabric.ErrOtherCluster):
			p.cfg.Log.Warn("a remembered peer address now belongs to another cluster", "addr", a)
		}
	}
	return nil
}

// standingEvery is how often a peer that knows no leader asks the others
// whether it still belongs to the cluster.
const standingEvery = 10 * time.Second

// standingLoop stops a peer the cluster removed while it ran: the leader
// drops its connections at once, so its replica may never apply its own
// removal; once it knows no leader it asks the others, who say why.
func (p *Peer) standingLoop() {
	tick := time.NewTicker(standingEvery)
	defer tick.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
		if name, _ := p.LeaderAPI(); name != "" {
			continue
		}
		if err := p.checkStanding(); err != nil {
			p.cfg.Log.Error("stopping", "err", err)
			p.fail(err)
			return
		}
	}
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
				p.refreshTrustSoon()
			}
		},
	}
}

// refreshTrustSoon asks the trust refresh to run (at most every
// trustRefreshEvery).
func (p *Peer) refreshTrustSoon() {
	select {
	case p.trustRefresh <- struct{}{}:
	default:
	}
}

// trustRefreshEvery spaces the asks of trustRefreshLoop.
const trustRefreshEvery = 5 * time.Second

// trustRefreshLoop learns of peers admitted while this one was down: when a
// certificate of the cluster's CA names a peer this peer does not know, it
// asks the peers it knows for their trust set and takes a newer one. (Its
// replica would tell it, but the leader may be one of those new peers,
// whose connections it refuses.)
func (p *Peer) trustRefreshLoop() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.trustRefresh:
		}
		if !p.refreshTrust() {
			continue // no peer's address known yet (just restarted): the next refusal asks again
		}
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(trustRefreshEvery):
		}
	}
}

// refreshTrust asks the peers this one knows for their trust set and takes
// the first newer one; it reports whether it could ask any.
func (p *Peer) refreshTrust() bool {
	have := p.trust.Set()
	asked := false
	for name := range have.Members {
		url := p.peerURL(name)
		if name == p.cfg.Name || url == "" {
			continue
		}
		asked = true
		ctx, cancel := context.WithTimeout(p.ctx, 3*time.Second)
		var got api.PeerTrust
		err := (&api.Client{BaseURL: url, HTTP: p.peerHTTP}).Do(ctx, http.MethodGet, api.TrustPath, nil, &got)
		cancel()
		if err != nil || got.Index <= have.Index {
			p.cfg.Log.Debug("asked a peer for the cluster's peers", "peer", name, "index", got.Index, "have", have.Index, "err", err)
			continue
		}
		set := fabric.TrustSet{Index: got.Index, Members: got.Members, Removed: map[string]fabric.Removal{}}
		for kid, r := range got.Removed {
			set.Removed[kid] = fabric.Removal{Name: r.Name, KeyID: kid, At: r.At, By: r.By}
		}
		if ok, err := p.trust.Update(set); err != nil {
			p.cfg.Log.Warn("cannot keep the trust set", "err", err)
		} else if ok {
			p.cfg.Log.Info("learned the cluster's peers from a peer", "from", name, "index", got.Index, "peers", len(got.Members))
		}
		return true
	}
	return asked
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

// serveJoins answers the join service on the gossip port's TLS streams.
func (p *Peer) serveJoins() {
	log := p.cfg.Log.With("part", "join")
	srv := &http.Server{
		Handler:           http.MaxBytesHandler(fabric.JoinHandler(p.member, log), 64<<10),
		ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second,
		// A host whose token names another cluster ends the handshake (it
		// checks the CA first): the log says so.
		ErrorLog: slog.NewLogLogger(log.With("hint", "a failed handshake is a host with another cluster's token, or not a join").Handler(), slog.LevelWarn),
	}
	l := tls.NewListener(p.joinL, p.id.JoinServerConfig())
	p.wg.Go(func() {
		<-p.ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	p.wg.Go(func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			p.cfg.Log.Error("join service stopped", "err", err)
		}
	})
}

// maxJoinConns bounds the join service's open connections.
const maxJoinConns = 64

// connListener is a net.Listener fed with connections by put (the gossip
// port's TLS streams).
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newConnListener(addr net.Addr) *connListener {
	return &connListener{addr: addr, conns: make(chan net.Conn), slots: make(chan struct{}, maxJoinConns), done: make(chan struct{})}
}

func (l *connListener) put(c net.Conn) {
	select {
	case l.slots <- struct{}{}:
	default:
		_ = c.Close() // too many at once
		return
	}
	sc := &slotConn{Conn: c, release: func() { <-l.slots }}
	select {
	case l.conns <- sc:
	case <-l.done:
		_ = sc.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
