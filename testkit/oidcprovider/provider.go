package oidcprovider

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	exstorage "github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is a person of the provider's directory.
type User struct {
	Username, Password, Email string
	Groups                    []string
}

// Provider is a running provider.
type Provider struct {
	// Issuer is its issuer URL (http://127.0.0.1:PORT).
	Issuer string
	// ClientID and ClientSecret are the client svc is registered as.
	ClientID, ClientSecret string

	users *users
	srv   *http.Server
}

// Start runs a provider on 127.0.0.1 until the test ends. redirects are the
// client's redirect URIs besides http://127.0.0.1/callback (any port).
func Start(t testing.TB, people []User, redirects ...string) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	p := &Provider{Issuer: issuer, ClientID: "svc-cluster", ClientSecret: "svc-test-secret", users: &users{byID: map[string]*User{}}}
	for i := range people {
		u := people[i]
		p.users.byID[u.Username] = &u // the id is the name: the example device flow names the subject by it
	}
	cl := &client{id: p.ClientID, redirects: append([]string{"http://127.0.0.1/callback"}, redirects...)}
	st := &storage{
		Storage: exstorage.NewStorageWithClients(p.users, map[string]*exstorage.Client{
			// The example storage keeps device authorizations only of the
			// clients it knows; the client it answers with is cl.
			p.ClientID: exstorage.DeviceClient(p.ClientID, p.ClientSecret),
		}),
		client: cl, users: p.users,
	}
	handler := exampleop.SetupServer(issuer, st, nil, false)
	p.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(p.Close)
	return p
}

// Close stops the provider: it answers nothing after.
func (p *Provider) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}

// SetGroups changes a person's groups in the directory (their next ID
// token carries them).
func (p *Provider) SetGroups(username string, groups []string) {
	p.users.mu.Lock()
	defer p.users.mu.Unlock()
	if u, ok := p.users.byID[username]; ok {
		u.Groups = slices.Clone(groups)
	}
}

// users is the directory, as the example storage reads it.
type users struct {
	mu   sync.Mutex
	byID map[string]*User
}

func (us *users) example(id string, u *User) *exstorage.User {
	return &exstorage.User{ID: id, Username: u.Username, Password: u.Password, FirstName: u.Username, LastName: "Test",
		Email: u.Email, EmailVerified: true, PreferredLanguage: language.English}
}

func (us *users) GetUserByID(id string) *exstorage.User {
	us.mu.Lock()
	defer us.mu.Unlock()
	if u, ok := us.byID[id]; ok {
		return us.example(id, u)
	}
	return nil
}

func (us *users) GetUserByUsername(name string) *exstorage.User {
	us.mu.Lock()
	defer us.mu.Unlock()
	for id, u := range us.byID {
		if u.Username == name {
			return us.example(id, u)
		}
	}
	return nil
}

func (us *users) ExampleClientID() string { return "service" }

func (us *users) groups(id string) []string {
	us.mu.Lock()
	defer us.mu.Unlock()
	if u, ok := us.byID[id]; ok {
		return slices.Clone(u.Groups)
	}
	return nil
}

// storage is the example storage with svc's client and a groups claim.
type storage struct {
	*exstorage.Storage
	client *client
	users  *users
}

func (s *storage) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	if id == s.client.id {
		return s.client, nil
	}
	return nil, errors.New("client not found")
}

func (s *storage) SetUserinfoFromRequest(ctx context.Context, ui *oidc.UserInfo, tr op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, ui, tr, scopes); err != nil {
		return err
	}
	if slices.Contains(scopes, "groups") {
		ui.AppendClaims("groups", s.users.groups(tr.GetSubject()))
	}
	return nil
}

// client is svc's registration: a native application (loopback redirects
// on any port) with a secret, allowed the code and device grants.
type client struct {
	id        string
	redirects []string
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirects }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeNative }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) LoginURL(id string) string            { return "/login/username?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration       { return time.Hour }
func (c *client) DevMode() bool                        { return false }
func (c *client) IsScopeAllowed(scope string) bool     { return scope == "groups" }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeDeviceCode}
}
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
