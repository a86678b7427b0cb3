package signin

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
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
	// DefaultScopes are what every provider takes: "groups" is an unknown
	// scope to Entra ID, Okta's default authorization server and Keycloak
	// (without a client scope of that name), so it is asked for only where
	// the admin adds it (docs/oidc.md says where).
	DefaultScopes        = []string{oidc.ScopeOpenID, "email", "profile"}
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
	// Issuer and Subject are who the person is to the provider: a person
	// is that pair, never a name alone.
	Issuer, Subject string
}

// Service runs sign-ins. It is safe for concurrent use.
type Service struct {
	cfg  Config
	http *http.Client

	mu     sync.Mutex
	remote map[string]*remote // by provider name
	// used are the states and device handles redeemed here (their hash,
	// to when they expire): each signs one person in once.
	used map[string]int64
}

// maxUsed bounds the redeemed states and handles kept (each at most
// StateTTL).
const maxUsed = 100_000

// once marks a sealed state or handle redeemed, and reports whether it was
// not before. The redemptions run on the leader; one it did not see (the
// leader changed) is known to the provider, which redeems a code once.
func (s *Service) once(kind, raw string, expires int64) bool {
	sum := sha256.Sum256([]byte(kind + "/" + raw))
	k := string(sum[:])
	now := time.Now().Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.used) >= maxUsed {
		for k, exp := range s.used {
			if exp < now {
				delete(s.used, k)
			}
		}
	}
	if _, seen := s.used[k]; seen || len(s.used) >= maxUsed {
		return false
	}
	s.used[k] = expires
	return true
}

// remote is a provider's discovered endpoints and key set.
type remote struct {
	issuer, clientID string
	provider         *oidc.Provider
	verifier         *oidc.IDTokenVerifier
	at               time.Time
	// userInfo is the provider's UserInfo endpoint ("" for none);
	// issResponse says it names itself in its authorization answers
	// (RFC 9207), which must then carry its issuer.
	userInfo    string
	issResponse bool
	// authStyle is how the client authenticates at the token endpoint, as
	// the provider's discovery document says it takes.
	authStyle oauth2.AuthStyle
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
	return &Service{cfg: cfg, http: &http.Client{Transport: tr, Timeout: cfg.Timeout}, remote: map[string]*remote{}, used: map[string]int64{}}
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
	var extra struct {
		ISS     bool     `json:"authorization_response_iss_parameter_supported"`
		Methods []string `json:"token_endpoint_auth_methods_supported"`
	}
	_ = op.Claims(&extra)
	// A provider that takes one way of client authentication gets it at
	// once (one token request per code); one that takes both may have
	// registered the client for either, and is asked the one way, then the
	// other (once one worked, it is remembered).
	basic, post := slices.Contains(extra.Methods, "client_secret_basic"), slices.Contains(extra.Methods, "client_secret_post")
	style := oauth2.AuthStyleAutoDetect
	switch {
	case basic && !post:
		style = oauth2.AuthStyleInHeader
	case post && !basic:
		style = oauth2.AuthStyleInParams
	}
	r = &remote{issuer: p.Issuer, clientID: p.ClientID, provider: op, at: time.Now(), authStyle: style,
		verifier: op.Verifier(&oidc.Config{ClientID: p.ClientID}), userInfo: op.UserInfoEndpoint(), issResponse: extra.ISS}
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
	ep := r.provider.Endpoint()
	ep.AuthStyle = r.authStyle
	if secret == "" {
		// a public client names itself in the form and sends no secret
		// (Entra ID refuses one from a public client: AADSTS700025)
		ep.AuthStyle = oauth2.AuthStyleInParams
	}
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: secret, Endpoint: ep, RedirectURL: redirect, Scopes: scopes}, nil
}

// SecretAAD binds a provider's sealed client secret to its name.
func SecretAAD(provider string) []byte { return []byte("svc-oidc-client-secret/" + provider) }

// CheckRedirect refuses a redirect address a sign-in may not use: the only
// ones that are svc's are the web UI's own callback (ownCallback: the
// address of /ui/callback as the request reached this peer) and a loopback
// address (the CLI's listener, RFC 8252 7.3). Any other would hand the
// code to whoever owns that address.
func CheckRedirect(raw, ownCallback string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || len(raw) > api.MaxOIDCRedirectURI || u.Fragment != "" {
		return fmt.Errorf("%w: redirectUri %q must be an absolute URL without a fragment", ErrInvalid, raw)
	}
	if raw == ownCallback && ownCallback != "" {
		return nil
	}
	if (u.Scheme == "http" || u.Scheme == "https") && loopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%w: redirectUri %q must be this cluster's web UI callback (%s) or a loopback address (the CLI's)", ErrInvalid, raw, ownCallback)
}

// CheckIssuerURL takes an https issuer, or http on a loopback address (a
// provider on the same host, as in tests).
func CheckIssuerURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || len(raw) > api.MaxOIDCRedirectURI {
		return fmt.Errorf("%w: %q must be the provider's issuer URL (https://...)", ErrInvalid, raw)
	}
	if u.Scheme == "https" || u.Scheme == "http" && loopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("%w: %q must be https (plain http only on a loopback address)", ErrInvalid, raw)
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

// sealed is what travels in the OAuth state (or a device handle). The
// state carries the PKCE challenge, never its verifier: the verifier stays
// with the client that started the sign-in, and comes only with the
// redemption, so that the redirect address alone (code and state, as a
// browser's history or a proxy's log keeps it) redeems nothing.
type sealed struct {
	Provider  string `json:"p"`
	Issuer    string `json:"i"`
	Nonce     string `json:"n,omitempty"`
	Challenge string `json:"c,omitempty"`
	Redirect  string `json:"r,omitempty"`
	Device    string `json:"d,omitempty"`
	Interval  int    `json:"t,omitempty"`
	Expires   int64  `json:"e"`
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
