package fabric

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testCluster is a CA, its trust set and secret, and a way to make peers of it.
type testCluster struct {
	t     *testing.T
	caDER []byte
	ca    *x509.Certificate
	caKey *ecdsa.PrivateKey
	trust *Trust
	sec   []byte
}

func newTestCluster(t *testing.T) *testCluster {
	t.Helper()
	der, key, err := NewCA("c1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := OpenTrust(t.TempDir() + "/trust.json")
	if err != nil {
		t.Fatal(err)
	}
	sec, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return &testCluster{t: t, caDER: der, ca: ca, caKey: key, trust: tr, sec: sec}
}

// peer makes a peer identity valid from notBefore for ttl; admitted adds it
// to the trust set.
func (c *testCluster) peer(name string, admitted bool, notBefore time.Time, ttl time.Duration) *Identity {
	c.t.Helper()
	key, err := NewKey()
	if err != nil {
		c.t.Fatal(err)
	}
	der, err := Issue(c.ca, c.caKey, name, []net.IP{net.IPv4(127, 0, 0, 1)}, key.Public(), notBefore, ttl)
	if err != nil {
		c.t.Fatal(err)
	}
	id, err := NewIdentity(c.t.TempDir(), "c1", name, c.caDER, key, der, c.sec)
	if err != nil {
		c.t.Fatal(err)
	}
	if admitted {
		c.admit(name, id.KeyID())
	}
	return id
}

func (c *testCluster) admit(name, keyID string) {
	c.t.Helper()
	s := c.trust.Set()
	s.Index++
	s.Members[name] = keyID
	if _, err := c.trust.Update(s); err != nil {
		c.t.Fatal(err)
	}
}

func TestJoinToken_roundtrip_and_bad_forms(t *testing.T) {
	tok, err := NewJoinToken(strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseJoinToken(" " + tok.String() + "\n")
	if err != nil || got != tok {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, tok)
	}
	good := tok.String()
	parts := strings.Split(good, ".")
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"other prefix", "svcjt2." + strings.Join(parts[1:], ".")},
		{"three parts", strings.Join(parts[:3], ".")},
		{"short fingerprint", parts[0] + ".abcd." + parts[2] + "." + parts[3]},
		{"upper-case id", parts[0] + "." + parts[1] + "." + strings.ToUpper(parts[2] + "x")[:16] + "." + parts[3]},
		{"short secret", parts[0] + "." + parts[1] + "." + parts[2] + ".abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParseJoinToken(tc.in); !errors.Is(err, ErrBadToken) {
				t.Fatalf("ParseJoinToken(%q) = %v, want ErrBadToken", tc.in, err)
			}
		})
	}
	if HashSecret(tok.Secret) == tok.Secret || !SameHash(HashSecret(tok.Secret), HashSecret(tok.Secret)) {
		t.Fatal("hash of the secret")
	}
}

func TestWrap_opens_only_with_its_secret_purpose_and_place(t *testing.T) {
	sec, _ := NewSecret()
	other, _ := NewSecret()
	w, err := Wrap(sec, PurposeSigningKey, []byte("seed"), []byte("c1"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Unwrap(sec, PurposeSigningKey, w, []byte("c1")); err != nil || string(got) != "seed" {
		t.Fatalf("unwrap: %q %v", got, err)
	}
	for _, tc := range []struct {
		name, purpose, aad string
		secret             []byte
	}{
		{"other secret", PurposeSigningKey, "c1", other},
		{"other purpose", PurposeCAKey, "c1", sec},
		{"other place", PurposeSigningKey, "c2", sec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Unwrap(tc.secret, tc.purpose, w, []byte(tc.aad)); !errors.Is(err, ErrUnwrap) {
				t.Fatalf("unwrap: %v, want ErrUnwrap", err)
			}
		})
	}
	if _, err := Derive(nil, PurposeRegistry); err == nil {
		t.Fatal("derived a key from no secret")
	}
}

func TestIdentity_save_load_renew(t *testing.T) {
	c := newTestCluster(t)
	id := c.peer("peer-1", true, time.Now(), CertLifetime)
	if err := id.Save(); err != nil {
		t.Fatal(err)
	}
	got, err := LoadIdentity(id.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "peer-1" || got.ClusterID != "c1" || got.KeyID() != id.KeyID() || string(got.Secret()) != string(c.sec) {
		t.Fatalf("loaded %+v", got)
	}
	if _, err := LoadIdentity(t.TempDir()); !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("empty dir: %v", err)
	}
	if id.NeedsRenewal(time.Now(), []net.IP{net.IPv4(127, 0, 0, 1)}) {
		t.Fatal("a fresh certificate needs renewal")
	}
	if !id.NeedsRenewal(time.Now().Add(17*time.Hour), nil) {
		t.Fatal("a certificate with a quarter of its life left does not need renewal")
	}
	if !id.NeedsRenewal(time.Now(), []net.IP{net.IPv4(10, 0, 0, 9)}) {
		t.Fatal("a certificate without the peer's new address does not need renewal")
	}
	der, err := Issue(c.ca, c.caKey, "peer-1", []net.IP{net.IPv4(10, 0, 0, 9)}, id.Key.Public(), time.Now(), CertLifetime)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.Renew(der); err != nil {
		t.Fatal(err)
	}
	again, err := LoadIdentity(id.Dir)
	if err != nil || !again.Certificate().Leaf.IPAddresses[0].Equal(net.IPv4(10, 0, 0, 9)) {
		t.Fatalf("renewed certificate not kept: %v", err)
	}
	other := c.peer("peer-2", false, time.Now(), CertLifetime)
	if err := id.Renew(other.Certificate().Leaf.Raw); err == nil {
		t.Fatal("took another peer's certificate")
	}
}

func TestVerifyPeer_cases(t *testing.T) {
	c := newTestCluster(t)
	good := c.peer("peer-1", true, time.Now(), CertLifetime)
	notAdmitted := c.peer("peer-2", false, time.Now(), CertLifetime)
	expired := c.peer("peer-3", true, time.Now().Add(-48*time.Hour), CertLifetime)
	impostor := c.peer("peer-1", false, time.Now(), CertLifetime) // the CA's key, not peer-1's
	foreign := newTestCluster(t)
	outsider := foreign.peer("peer-1", false, time.Now(), CertLifetime)
	removed := c.peer("peer-4", true, time.Now(), CertLifetime)
	s := c.trust.Set()
	s.Index++
	delete(s.Members, "peer-4")
	s.Removed = map[string]Removal{removed.KeyID(): {Name: "peer-4", KeyID: removed.KeyID(), At: time.Now(), By: "admin"}}
	if _, err := c.trust.Update(s); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		id   *Identity
		want error
	}{
		{"admitted", good, nil},
		{"not admitted", notAdmitted, ErrNotMember},
		{"expired", expired, errAny},
		{"another key under an admitted name", impostor, ErrNotMember},
		{"another cluster's CA", outsider, errAny},
		{"removed", removed, ErrRemoved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, err := good.VerifyPeer([]*x509.Certificate{tc.id.Certificate().Leaf}, c.trust, time.Now())
			switch {
			case tc.want == nil && (err != nil || name != tc.id.Name):
				t.Fatalf("VerifyPeer = %q, %v", name, err)
			case tc.want == errAny && err == nil, tc.want != nil && tc.want != errAny && !errors.Is(err, tc.want):
				t.Fatalf("VerifyPeer = %v, want %v", err, tc.want)
			}
		})
	}
}

var errAny = errors.New("any error")

// TestPeerTLS_handshake checks the peer configurations end to end over TCP:
// an admitted client is served and named; a client without a certificate,
// and one of another cluster, get nothing; a server that is not admitted
// is refused by the client.
func TestPeerTLS_handshake(t *testing.T) {
	c := newTestCluster(t)
	server := c.peer("peer-1", true, time.Now(), CertLifetime)
	client := c.peer("peer-2", true, time.Now(), CertLifetime)
	l, err := tls.Listen("tcp", "127.0.0.1:0", server.PeerServerConfig(c.trust))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	names := make(chan string, 8)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				tc := conn.(*tls.Conn)
				if err := tc.Handshake(); err != nil {
					names <- "refused"
					return
				}
				cs := tc.ConnectionState()
				n, err := server.PeerOf(&cs, c.trust)
				if err != nil {
					names <- "refused"
					return
				}
				names <- n
				_, _ = io.WriteString(conn, "hello")
			}()
		}
	}()
	dial := func(cfg *tls.Config) error {
		conn, err := tls.Dial("tcp", l.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		_, err = io.ReadAll(conn)
		return err
	}
	if err := dial(client.PeerClientConfig(c.trust)); err != nil {
		t.Fatalf("admitted client: %v", err)
	}
	if got := <-names; got != "peer-2" {
		t.Fatalf("server saw %q", got)
	}
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true}
	if err := dial(noCert); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	if got := <-names; got != "refused" {
		t.Fatalf("server saw %q", got)
	}
	foreign := newTestCluster(t)
	outsider := foreign.peer("peer-2", true, time.Now(), CertLifetime)
	if err := dial(outsider.PeerClientConfig(foreign.trust)); err == nil {
		t.Fatal("another cluster's peer was served")
	}
	<-names
	// The server is not admitted in the client's view: the client refuses it.
	view, _ := OpenTrust(t.TempDir() + "/t.json")
	if _, err := view.Update(TrustSet{Index: 1, Members: map[string]string{"peer-2": client.KeyID()}}); err != nil {
		t.Fatal(err)
	}
	if err := dial(client.PeerClientConfig(view)); err == nil || !errors.Is(err, ErrNotMember) {
		t.Fatalf("client took a server it does not trust: %v", err)
	}
}

type fakeAdmitter struct {
	resp JoinResponse
}

func (f *fakeAdmitter) Admit(_ context.Context, req JoinRequest, _ string) (JoinResponse, error) {
	if req.Secret != "good" && !strings.HasPrefix(req.TokenID, "0") {
		return JoinResponse{}, Refuse(http.StatusUnauthorized, "join token %s has expired", req.TokenID)
	}
	return f.resp, nil
}

func (f *fakeAdmitter) Keys(context.Context, []*x509.Certificate) (KeysResponse, error) {
	return KeysResponse{}, Refuse(http.StatusForbidden, "not here")
}

func (f *fakeAdmitter) Standing(_ context.Context, certs []*x509.Certificate) error {
	if len(certs) == 0 {
		return Refuse(http.StatusForbidden, "no certificate")
	}
	return Refuse(http.StatusForbidden, "peer %q was removed", certs[0].Subject.CommonName)
}

func TestJoin_checks_the_CA_before_sending(t *testing.T) {
	c := newTestCluster(t)
	server := c.peer("peer-1", true, time.Now(), CertLifetime)
	l, err := tls.Listen("tcp", "127.0.0.1:0", server.JoinServerConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: JoinHandler(&fakeAdmitter{resp: JoinResponse{ClusterID: "c1"}}, slog.New(slog.DiscardHandler)), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	var d net.Dialer
	ctx := context.Background()
	tok, _ := NewJoinToken(server.CAFingerprint())
	tok.ID = "0123456789abcdef"
	resp, err := Join(ctx, d.DialContext, l.Addr().String(), tok, JoinRequest{Name: "new"})
	if err != nil || resp.ClusterID != "c1" {
		t.Fatalf("join: %+v %v", resp, err)
	}
	tok.ID = "fedcba9876543210"
	if _, err := Join(ctx, d.DialContext, l.Addr().String(), tok, JoinRequest{Name: "new"}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("refused join: %v", err)
	}
	other, _ := NewJoinToken(Fingerprint(newTestCluster(t).caDER))
	if _, err := Join(ctx, d.DialContext, l.Addr().String(), other, JoinRequest{Name: "new"}); !errors.Is(err, ErrOtherCluster) {
		t.Fatalf("join with another cluster's token: %v", err)
	}
	if err := server.Standing(ctx, d.DialContext, l.Addr().String()); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `"peer-1" was removed`) {
		t.Fatalf("standing: %v", err)
	}
}
