package peerlink

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/node/fabric"
	"github.com/svc-project/svc/node/membership"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/certtest"
)

type fakeState struct {
	nodes map[string]raftfsm.NodeView
	peers map[string]raftfsm.PeerIdentity
	cert  *raftfsm.Cert
}

func (s fakeState) Node(name string) (raftfsm.NodeView, bool) {
	n, ok := s.nodes[name]
	return n, ok
}

func (s fakeState) PeerIdentity(name string) (raftfsm.PeerIdentity, bool) {
	p, ok := s.peers[name]
	return p, ok
}

func (s fakeState) Cert() (raftfsm.Cert, bool) {
	if s.cert == nil {
		return raftfsm.Cert{}, false
	}
	return *s.cert, true
}

func node(addr string, tlsPort int, apiAddr string) raftfsm.NodeView {
	var n raftfsm.NodeView
	n.Addr, n.TLSPort, n.APIAddr = addr, tlsPort, apiAddr
	return n
}

// members is what gossip knows: b with its ports, c without a TLS port.
func members(name string) (gossip.Member, bool) {
	switch name {
	case "b":
		return gossip.Member{Name: "b", Report: gossip.Report{Addr: "10.0.0.2", TLSPort: 8443, APIAddr: "10.0.0.2:8080"}}, true
	case "c":
		return gossip.Member{Name: "c", Report: gossip.Report{Addr: "10.0.0.3"}}, true
	}
	return gossip.Member{}, false
}

func TestLinks_peer_addr(t *testing.T) {
	state := fakeState{nodes: map[string]raftfsm.NodeView{
		"b": node("10.9.9.2", 9443, "10.9.9.2:9080"), // gossip is newer
		"c": node("10.0.0.3", 8443, "10.0.0.3:8080"),
		"d": node("10.0.0.4", 0, "10.0.0.4:8080"),
	}}
	cases := []struct {
		name, peer string
		plain      bool
		addr, url  string
		apiAddr    string
	}{
		{name: "self", peer: "a", addr: "127.0.0.1:1443", url: "https://127.0.0.1:1443", apiAddr: "127.0.0.1:1080"},
		{name: "gossip_first", peer: "b", addr: "10.0.0.2:8443", url: "https://10.0.0.2:8443", apiAddr: "10.0.0.2:8080"},
		{name: "replica_when_gossip_lacks_the_port", peer: "c", addr: "10.0.0.3:8443", url: "https://10.0.0.3:8443", apiAddr: "10.0.0.3:8080"},
		{name: "no_tls_port_anywhere", peer: "d", addr: "", url: "", apiAddr: "10.0.0.4:8080"},
		{name: "unknown", peer: "e"},
		{name: "plain_calls_the_api_port", peer: "b", plain: true, addr: "10.0.0.2:8080", url: "http://10.0.0.2:8080", apiAddr: "10.0.0.2:8080"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := New(Config{Name: "a", TLSAddr: "127.0.0.1:1443", APIAddr: "127.0.0.1:1080", Plain: c.plain, State: state, Member: members})
			if got := l.PeerAddr(c.peer); got != c.addr {
				t.Errorf("PeerAddr %q, want %q", got, c.addr)
			}
			if got := l.URL(c.peer); got != c.url {
				t.Errorf("URL %q, want %q", got, c.url)
			}
			if got := l.APIAddr(c.peer); got != c.apiAddr {
				t.Errorf("APIAddr %q, want %q", got, c.apiAddr)
			}
		})
	}
}

func TestLinks_plain_peer_of(t *testing.T) {
	state := fakeState{peers: map[string]raftfsm.PeerIdentity{"b": {Name: "b"}}}
	l := New(Config{Name: "a", Plain: true, State: state, Member: members})
	cases := []struct {
		name, header string
		want         bool
	}{
		{name: "admitted", header: "b", want: true},
		{name: "not_admitted", header: "x"},
		{name: "no_header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if c.header != "" {
				r.Header.Set(api.HeaderPlainPeer, c.header)
			}
			if name, ok := l.PeerOf(r); ok != c.want || (ok && name != c.header) {
				t.Fatalf("PeerOf = %q, %v; want %v", name, ok, c.want)
			}
		})
	}
}

// A peer's links over real TLS: a call through PeerTransport to the HTTPS
// port is known as the peer's; a client that does not ask for the peers'
// server name gets the user-facing certificate (the peer's own until one
// is uploaded, then the uploaded one) and is no peer.
func TestLinks_https_port(t *testing.T) {
	dir := t.TempDir()
	id, err := membership.Form(dir, membership.Host{Name: "a", Addr: "127.0.0.1", RaftAddr: "127.0.0.1:1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	trust, err := fabric.OpenTrust(filepath.Join(dir, fabric.FileTrust))
	if err != nil {
		t.Fatal(err)
	}
	state := &fakeState{peers: map[string]raftfsm.PeerIdentity{"a": {Name: "a"}}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(Config{Name: "a", TLSAddr: ln.Addr().String(), Identity: id, Trust: trust, State: state, Member: members})
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name, ok := l.PeerOf(r)
			if !ok {
				name = "not a peer"
			}
			_, _ = io.WriteString(w, name)
		}),
		TLSConfig: l.HTTPSConfig(), ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })

	get := func(cl *http.Client) (string, *tls.ConnectionState) {
		t.Helper()
		resp, err := cl.Get(l.PeerScheme() + "://" + l.PeerAddr("a") + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b), resp.TLS
	}
	if got, _ := get(&http.Client{Transport: l.PeerTransport()}); got != "a" {
		t.Fatalf("a call over the fabric answered %q, want the peer's name", got)
	}
	// a peer that awaits an admin's approval is no peer for the API
	state.peers["a"] = raftfsm.PeerIdentity{Name: "a", Pending: true}
	if got, _ := get(&http.Client{Transport: l.PeerTransport()}); got != "not a peer" {
		t.Fatalf("a pending peer's call over the fabric answered %q, want not a peer", got)
	}
	state.peers["a"] = raftfsm.PeerIdentity{Name: "a"}
	user := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} // the test reads what it is served
	got, cs := get(user)
	if got != "not a peer" || cs.PeerCertificates[0].Subject.CommonName != "a" {
		t.Fatalf("a user: %q, served %q", got, cs.PeerCertificates[0].Subject.CommonName)
	}

	certPEM, keyPEM, err := certtest.SelfSigned("svc.example.test", "svc.example.test")
	if err != nil {
		t.Fatal(err)
	}
	state.cert = &raftfsm.Cert{CertPEM: string(certPEM), KeyPEM: string(keyPEM)}
	user.CloseIdleConnections()
	if _, cs := get(user); cs.PeerCertificates[0].Subject.CommonName != "svc.example.test" {
		t.Fatalf("after an upload a user is served %q", cs.PeerCertificates[0].Subject.CommonName)
	}
	// A broken upload is refused at the handshake, naming it.
	state.cert = &raftfsm.Cert{CertPEM: "not a certificate", KeyPEM: string(keyPEM)}
	user.CloseIdleConnections()
	if _, err := user.Get("https://" + l.PeerAddr("a") + "/"); err == nil {
		t.Fatal("a broken uploaded certificate was served")
	}
}

// TestLinks_calls_carry_the_version: every call of a peer to another says
// which svc makes it, and its command level.
func TestLinks_calls_carry_the_version(t *testing.T) {
	got := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	defer srv.Close()
	l := New(Config{Name: "a", Version: "v9.8.7", Plain: true, State: fakeState{}, Member: members})
	resp, err := (&http.Client{Transport: l.PeerTransport()}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := <-got
	if h.Get("User-Agent") != "svc/v9.8.7" || h.Get(api.HeaderPeerLevel) != strconv.Itoa(raftfsm.Level) || h.Get(api.HeaderPlainPeer) != "a" {
		t.Fatalf("headers %v", h)
	}
}
