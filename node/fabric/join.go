package fabric

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/svc-project/svc/internal/keyedlimit"
)

// Paths of the join service, served over TLS on the gossip port.
const (
	JoinPath     = "/fabric/v1/join"
	StandingPath = "/fabric/v1/standing"
)

// Errors of the join client; compare with errors.Is.
var (
	// ErrRefused: the cluster answered and refused (a bad, expired, used or
	// revoked token, a name taken, a removed peer). Retrying does not help.
	ErrRefused = errors.New("refused by the cluster")
	// ErrOtherCluster: the peer contacted is not of the cluster the token
	// names (its CA differs).
	ErrOtherCluster = errors.New("the peer belongs to another cluster")
)

// JoinRequest is what a new host sends, over TLS to a peer whose CA it
// checked against the token: the token's id and secret, and who it is.
type JoinRequest struct {
	TokenID string `json:"tokenId"`
	Secret  string `json:"secret"`
	Name    string `json:"name"`
	// Addr is the host's IP; RaftAddr its Raft host:port.
	Addr     string `json:"addr"`
	RaftAddr string `json:"raftAddr"`
	// PublicKey is the host's key (DER SubjectPublicKeyInfo): the cluster
	// certifies it.
	PublicKey []byte `json:"publicKey"`
}

// JoinResponse is what an admitted host gets: everything a peer holds.
type JoinResponse struct {
	ClusterID string `json:"clusterId"`
	// Cert is the host's certificate (DER), of the CA in CA (DER).
	Cert []byte `json:"cert"`
	CA   []byte `json:"ca"`
	// Secret is the cluster secret; nil for a host admitted pending (it
	// fetches the secret once an admin approves it, KeysPath).
	Secret []byte `json:"secret,omitempty"`
	// Pending says the host awaits an admin's approval.
	Pending bool       `json:"pending,omitempty"`
	Gossip  GossipKeys `json:"gossip"`
	// Trust is the cluster's admitted peers, the new one included.
	Trust TrustSet `json:"trust"`
	// Peers are gossip addresses of live peers.
	Peers []string `json:"peers"`
}

// Refusal is an answer of the join service that is not a success: an HTTP
// status and why.
type Refusal struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (r *Refusal) Error() string { return r.Message }

// Refuse makes a Refusal.
func Refuse(code int, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Admitter is the cluster's side of the join service.
type Admitter interface {
	// Admit checks a join request and, when it holds, records the new peer
	// and answers its identity; refusals are *Refusal.
	Admit(ctx context.Context, req JoinRequest, from string) (JoinResponse, error)
	// Standing says whether the peer that presented certs may rejoin: nil,
	// or a *Refusal that says why not (removed, unknown).
	Standing(ctx context.Context, certs []*x509.Certificate) error
	// Keys answers an admitted peer (by certs) its gossip keyring, and
	// the cluster secret when it is approved; refusals are *Refusal.
	Keys(ctx context.Context, certs []*x509.Certificate) (KeysResponse, error)
}

// maxJoinBody bounds a join request.
const maxJoinBody = 16 << 10

// Bounds of the join attempts a source address may make: a host joins
// once (and asks again only when an answer was lost), so a source that
// asks more often is guessing.
const (
	joinRate    = 1 // per second
	joinBurst   = 10
	joinSources = 4096
	joinIdle    = 10 * time.Minute
)

// JoinHandler serves the join service. A source address may send
// joinBurst join requests at once and one a second after that; past it
// the request is refused (429) before it is read.
func JoinHandler(a Admitter, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	limit := keyedlimit.New(joinRate, joinBurst, joinSources, joinIdle)
	mux.HandleFunc("POST "+JoinPath, func(w http.ResponseWriter, r *http.Request) {
		src, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			src = r.RemoteAddr
		}
		if !limit.Allow(src, time.Now()) {
			log.Warn("refused a join: too many attempts", "from", r.RemoteAddr)
			w.Header().Set("Retry-After", "10")
			writeRefusal(w, Refuse(http.StatusTooManyRequests, "too many join attempts from %s; a host joins once: try again in a few seconds", src))
			return
		}
		var req JoinRequest
		dec := json.NewDecoder(io.LimitReader(r.Body, maxJoinBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			writeRefusal(w, Refuse(http.StatusBadRequest, "a join request is a JSON object: %v", err))
			return
		}
		resp, err := a.Admit(r.Context(), req, r.RemoteAddr)
		if err != nil {
			var ref *Refusal
			if !errors.As(err, &ref) {
				ref = Refuse(http.StatusServiceUnavailable, "the cluster could not admit the host now: %v", err)
			}
			log.Warn("refused a join", "from", r.RemoteAddr, "name", req.Name, "token", req.TokenID, "code", ref.Code, "why", ref.Message)
			writeRefusal(w, ref)
			return
		}
		log.Info("admitted a peer", "from", r.RemoteAddr, "name", req.Name, "token", req.TokenID)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	})
	mux.HandleFunc("GET "+StandingPath, func(w http.ResponseWriter, r *http.Request) {
		var certs []*x509.Certificate
		if r.TLS != nil {
			certs = r.TLS.PeerCertificates
		}
		if err := a.Standing(r.Context(), certs); err != nil {
			var ref *Refusal
			if !errors.As(err, &ref) {
				ref = Refuse(http.StatusServiceUnavailable, "%v", err)
			}
			writeRefusal(w, ref)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET "+KeysPath, keysHandler(a))
	return mux
}

func writeRefusal(w http.ResponseWriter, ref *Refusal) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ref.Code)
	_ = json.NewEncoder(w).Encode(ref)
}

// JoinServerConfig is the TLS configuration of the join service: the
// peer's certificate; a client certificate is asked for (a peer checking
// its standing sends one) but not required (a new host has none).
func (id *Identity) JoinServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return id.Certificate(), nil },
		ClientAuth:     tls.RequestClientCert,
	}
}

// DialFunc dials a TCP address.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// joinTimeout bounds one call of the join service.
const joinTimeout = 15 * time.Second

// caChecker checks that the server's chain ends in the CA whose
// fingerprint is caFP, and that the server's certificate is of that CA.
func caChecker(caFP string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) < 2 {
			return fmt.Errorf("%w: it sent no CA certificate", ErrOtherCluster)
		}
		ca := cs.PeerCertificates[len(cs.PeerCertificates)-1]
		if got := Fingerprint(ca.Raw); got != caFP {
			return fmt.Errorf("%w: its CA is %s…, the token names %s…", ErrOtherCluster, got[:16], caFP[:16])
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca)
		if _, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return fmt.Errorf("%w: its certificate is not its CA's: %v", ErrOtherCluster, err)
		}
		return nil
	}
}

func serviceClient(dial DialFunc, cfg *tls.Config) *http.Client {
	return &http.Client{
		Timeout: joinTimeout,
		Transport: &http.Transport{
			DialContext:       dial,
			TLSClientConfig:   cfg,
			DisableKeepAlives: true,
		},
	}
}

// Join asks the peer whose gossip port is at addr to admit this host with
// the token. A refusal wraps ErrRefused, a peer of another cluster
// ErrOtherCluster; anything else (the peer down, no leader) may pass.
func Join(ctx context.Context, dial DialFunc, addr string, tok JoinToken, req JoinRequest) (JoinResponse, error) {
	req.TokenID, req.Secret = tok.ID, tok.Secret
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, VerifyConnection: caChecker(tok.CA)}
	var resp JoinResponse
	if err := call(ctx, serviceClient(dial, cfg), http.MethodPost, "https://"+addr+JoinPath, req, &resp); err != nil {
		return JoinResponse{}, err
	}
	return resp, nil
}

// Standing asks the peer whose gossip port is at addr whether this peer may
// rejoin: nil, or an error wrapping ErrRefused that says why not.
func (id *Identity) Standing(ctx context.Context, dial DialFunc, addr string) error {
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, VerifyConnection: caChecker(id.CAFingerprint()),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return id.Certificate(), nil },
	}
	return call(ctx, serviceClient(dial, cfg), http.MethodGet, "https://"+addr+StandingPath, nil, nil)
}

func call(ctx context.Context, cl *http.Client, method, url string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := cl.Do(req)
	if err != nil {
		if errors.Is(err, ErrOtherCluster) {
			return fmt.Errorf("%s: %w", url, ErrOtherCluster)
		}
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		var ref Refusal
		if json.Unmarshal(b, &ref) != nil || ref.Message == "" {
			ref.Message = resp.Status
		}
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return fmt.Errorf("the cluster could not answer: %s", ref.Message)
		}
		return fmt.Errorf("%w: %s", ErrRefused, ref.Message)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("read the answer: %w", err)
		}
	}
	return nil
}
