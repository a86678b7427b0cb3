package signin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/httpapi/auth"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
)

// Errors of a sign-in; compare with errors.Is.
var (
	// ErrNoProvider: the cluster has no provider of that name.
	ErrNoProvider = errors.New("no such OpenID Connect provider")
	// ErrInvalid: the request is malformed (a redirect address, a state).
	ErrInvalid = errors.New("invalid sign-in request")
	// ErrRefused: the provider's answer or ID token does not sign anyone in.
	ErrRefused = errors.New("sign-in refused")
	// ErrNotAllowed: the person is who they say, but the provider's
	// configuration lets them in to nothing.
	ErrNotAllowed = errors.New("sign-in not allowed")
	// ErrUnavailable: the provider could not be reached or did not answer
	// in time.
	ErrUnavailable = errors.New("identity provider unavailable")
)

// Defaults of a provider's configuration.
var (
	DefaultScopes        = []string{oidc.ScopeOpenID, "email", "profile", "groups"}
	DefaultUsernameClaim = "email"
	DefaultGroupsClaim   = "groups"
)

// Bounds of a sign-in.
const (
	// StateTTL is how long a started sign-in may take.
	StateTTL = 10 * time.Minute
	// CallTimeout bounds each call to a provider (discovery, keys, token)
	// unless Config.Timeout says otherwise.
	CallTimeout = 10 * time.Second
	// PollWindow is how long one device poll waits for the person's approval.
	PollWindow = 12 * time.Second
	// rediscover is how old a provider's discovery document may get.
	rediscover = time.Hour
)

// State is what a sign-in reads of the replicated state.
type State interface {
	OIDCProvider(name string) (raftfsm.OIDCProvider, bool)
}

// Config configures a Service.
type Config struct {
	State State
	// Keys seal sign-in states and open the providers' client secrets.
	Keys auth.Keys
	// Egress is the addresses this peer may contact (nil: any).
	Egress *ocidisk.Egress
	// Timeout bounds each call to a provider (default CallTimeout).
	Timeout time.Duration
	Log     *slog.Logger
}

// Identity is a person a provider vouched for, as this cluster sees them.
type Identity struct {
	User     string
	Groups   []string
	Admin    bool
	Provider string
}

// Service runs sign-ins. It is safe for concurrent use.
type Service struct {
	cfg  Config
	http *http.Client

	mu     sync.Mutex
	remote map[string]*remote // by provider name
}

// remote is a provider's discovered endpoints and key set.
type remote struct {
	issuer, clientID string
	provider         *oidc.Provider
	verifier         *oidc.IDTokenVerifier
	at               time.Time
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = CallTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Egress != nil {
		tr.DialContext = cfg.Egress.Dialer()
	}
	return &Service{cfg: cfg, http: &http.Client{Transport: tr, Timeout: cfg.Timeout}, remote: map[string]*remote{}}
}

// provider returns a provider's configuration.
func (s *Service) provider(name string) (raftfsm.OIDCProvider, error) {
	p, ok := s.cfg.State.OIDCProvider(name)
	if !ok {
		return p, fmt.Errorf("%w: %q (an admin adds one with 'svc cluster oidc set')", ErrNoProvider, name)
	}
	return p, nil
}

// ctx carries the egress-bound HTTP client to go-oidc and oauth2.
func (s *Service) ctx(ctx context.Context) context.Context {
	return context.WithValue(oidc.ClientContext(ctx, s.http), oauth2.HTTPClient, s.http)
}

// discover returns the provider's endpoints and verifier, fetching its
// discovery document when it has none, or one older than an hour, or one
// of another issuer or client.
func (s *Service) discover(ctx context.Context, p raftfsm.OIDCProvider) (*remote, error) {
	s.mu.Lock()
	r, ok := s.remote[p.Name]
	s.mu.Unlock()
	if ok && r.issuer == p.Issuer && r.clientID == p.ClientID && time.Since(r.at) < rediscover {
		return r, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// The key set go-oidc keeps fetches with the context it was made with,
	// for as long as it lives: a context without the request's end.
	op, err := oidc.NewProvider(s.ctx(context.WithoutCancel(ctx)), p.Issuer)
	if err != nil {
		return nil, s.unreachable(p, "its discovery document", err)
	}
	r = &remote{issuer: p.Issuer, clientID: p.ClientID, provider: op, at: time.Now(),
		verifier: op.Verifier(&oidc.Config{ClientID: p.ClientID})}
	s.mu.Lock()
	s.remote[p.Name] = r
	s.mu.Unlock()
	return r, nil
}

// unreachable names a failure to talk to a provider.
func (s *Service) unreachable(p raftfsm.OIDCProvider, what string, err error) error {
	s.cfg.Log.Warn("identity provider", "provider", p.Name, "issuer", p.Issuer, "what", what, "err", err)
	if errors.Is(err, ocidisk.ErrUnreachable) {
		return fmt.Errorf("%w: provider %q: this peer may not contact %s: only public addresses and those the agent's --registry-allow lists", ErrUnavailable, p.Name, p.Issuer)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: provider %q (%s) did not answer %s within %s", ErrUnavailable, p.Name, p.Issuer, what, s.cfg.Timeout)
	}
	return fmt.Errorf("%w: provider %q (%s): cannot read %s: %v", ErrUnavailable, p.Name, p.Issuer, what, err)
}

// oauth builds the OAuth client of a provider, its secret unsealed.
func (s *Service) oauth(p raftfsm.OIDCProvider, r *remote, redirect string) (*oauth2.Config, error) {
	secret := ""
	if len(p.SealedClientSecret) > 0 {
		b, err := auth.Unseal(s.cfg.Keys.SealKey(), p.SealedClientSecret, SecretAAD(p.Name))
		if err != nil {
			return nil, fmt.Errorf("provider %q: client secret: %w", p.Name, err)
		}
		secret = string(b)
	}
	scopes := p.Scopes
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: secret, Endpoint: r.provider.Endpoint(), RedirectURL: redirect, Scopes: scopes}, nil
}

// SecretAAD binds a provider's sealed client secret to its name.
func SecretAAD(provider string) []byte { return []byte("svc-oidc-client-secret/" + provider) }

// CheckRedirect refuses a redirect address a sign-in may not use: it must be
// https, or http on a loopback address (the CLI's listener, RFC 8252 7.3).
func CheckRedirect(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || len(raw) > api.MaxOIDCRedirectURI || u.Fragment != "" {
		return fmt.Errorf("%w: redirectUri %q must be an absolute URL without a fragment", ErrInvalid, raw)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
	}
	return fmt.Errorf("%w: redirectUri %q must be https, or http on a loopback address", ErrInvalid, raw)
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// random returns n random bytes, base64url.
func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// sealed is what travels in the OAuth state (or a device handle).
type sealed struct {
	Provider string `json:"p"`
	Issuer   string `json:"i"`
	Nonce    string `json:"n,omitempty"`
	Verifier string `json:"v,omitempty"`
	Redirect string `json:"r,omitempty"`
	Device   string `json:"d,omitempty"`
	Interval int    `json:"t,omitempty"`
	Expires  int64  `json:"e"`
}

func stateAAD(kind, provider string) []byte { return []byte("svc-oidc-" + kind + "/" + provider) }

func (s *Service) seal(kind string, v sealed) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	out, err := auth.Seal(s.cfg.Keys.SealKey(), b, stateAAD(kind, v.Provider))
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(out), nil
}

func (s *Service) open(kind, provider, raw string, now time.Time) (sealed, error) {
	var v sealed
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err == nil && len(raw) <= 4096 {
		b, err = auth.Unseal(s.cfg.Keys.SealKey(), b, stateAAD(kind, provider))
	}
	if err != nil || json.Unmarshal(b, &v) != nil || v.Provider != provider {
		return v, fmt.Errorf("%w: the %s was not made by this cluster for provider %q, or was altered", ErrInvalid, kind, provider)
	}
	if now.Unix() > v.Expires {
		return v, fmt.Errorf("%w: this sign-in was started more than %s ago; start again", ErrRefused, StateTTL)
	}
	return v, nil
}
