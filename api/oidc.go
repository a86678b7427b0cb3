package api

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Paths of sign-in through OpenID Connect providers.
const (
	// OIDCPath lists the providers (admin); OIDCPath/NAME sets or removes one.
	OIDCPath = "/api/v1/auth/oidc"
	// SignInPath lists, without a token, the providers a person may sign in with.
	SignInPath = "/api/v1/auth/signin"
)

// Limits of OpenID Connect providers and sign-ins.
const (
	MaxOIDCProviders   = 16
	MaxOIDCScopes      = 32
	MaxOIDCGroups      = 100  // admin or allowed groups of one provider
	MaxGroupLen        = 256  // a group name, as the provider sends it
	MaxSignInGroups    = 256  // groups of one person kept at sign-in
	MaxOIDCClientID    = 1024 // client id, claim names, scopes
	MaxOIDCSecret      = 4096
	MaxOIDCRedirectURI = 2048
)

// OIDCProvider is an OpenID Connect provider people sign in with. The
// client secret is never returned: ClientSecretSet says whether there is one.
type OIDCProvider struct {
	Name            string    `json:"name"`
	Issuer          string    `json:"issuer"`
	ClientID        string    `json:"clientId"`
	ClientSecretSet bool      `json:"clientSecretSet"`
	Scopes          []string  `json:"scopes"`
	UsernameClaim   string    `json:"usernameClaim"`
	GroupsClaim     string    `json:"groupsClaim"`
	AdminGroups     []string  `json:"adminGroups"`
	AllowedGroups   []string  `json:"allowedGroups"`
	AllowedDomains  []string  `json:"allowedDomains"`
	AllowedUsers    []string  `json:"allowedUsers"`
	AllowAnyone     bool      `json:"allowAnyone"`
	CreatedAt       time.Time `json:"createdAt"`
}

// OIDCProviderRequest sets a provider (PUT /api/v1/auth/oidc/NAME). Empty
// fields take their defaults: scopes openid, email, profile; claims email
// and groups. Who may sign in beyond the admin groups must be said: allowed
// groups, Google Workspace domains ("hd" claim) or usernames, or
// AllowAnyone (every account the provider knows); a provider that says
// none of these is refused unless it has admin groups, and then admits
// only them.
type OIDCProviderRequest struct {
	Issuer         string   `json:"issuer"`
	ClientID       string   `json:"clientId"`
	ClientSecret   string   `json:"clientSecret,omitempty"`
	Scopes         []string `json:"scopes,omitempty"`
	UsernameClaim  string   `json:"usernameClaim,omitempty"`
	GroupsClaim    string   `json:"groupsClaim,omitempty"`
	AdminGroups    []string `json:"adminGroups,omitempty"`
	AllowedGroups  []string `json:"allowedGroups,omitempty"`
	AllowedDomains []string `json:"allowedDomains,omitempty"`
	AllowedUsers   []string `json:"allowedUsers,omitempty"`
	AllowAnyone    bool     `json:"allowAnyone,omitempty"`
}

// UsersPath lists the cluster's users (admin).
const UsersPath = "/api/v1/users"

// User is a user as admins see it: who root on a host named (no provider),
// or a person who signed in, with who they are to their provider (issuer
// and subject: a person is that pair, never a name alone).
type User struct {
	Name       string     `json:"name"`
	Admin      bool       `json:"admin"`
	Provider   string     `json:"provider,omitempty"`
	Issuer     string     `json:"issuer,omitempty"`
	Subject    string     `json:"subject,omitempty"`
	Groups     []string   `json:"groups"`
	CreatedAt  time.Time  `json:"createdAt"`
	SignedInAt *time.Time `json:"signedInAt,omitempty"`
}

// ListUsers lists the cluster's users (admin).
func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	var out List[User]
	err := c.Do(ctx, http.MethodGet, UsersPath, nil, &out)
	return out.Items, err
}

// SignInProvider is what a person needs to pick a provider.
type SignInProvider struct {
	Name   string `json:"name"`
	Issuer string `json:"issuer"`
}

// SignInStartRequest starts a browser sign-in: the provider sends the
// browser back to RedirectURI (the CLI's loopback address, or the web UI).
type SignInStartRequest struct {
	RedirectURI string `json:"redirectUri"`
}

// SignInStart is where to send the browser, the state the provider hands
// back with the code (the cluster's sealed record of this sign-in), and
// the PKCE code verifier: the client keeps it (in memory, or the web UI
// tab's session storage), never puts it in an address, and sends it with
// the code. Without it the provider's answer redeems nothing.
type SignInStart struct {
	AuthURL      string `json:"authUrl"`
	State        string `json:"state"`
	CodeVerifier string `json:"codeVerifier"`
}

// SignInCallback is what the provider handed back to the redirect URI
// (the code, the state and, where the provider names itself, its issuer:
// RFC 9207's "iss"), and the code verifier the client kept since it
// started the sign-in.
type SignInCallback struct {
	State        string `json:"state"`
	Code         string `json:"code"`
	CodeVerifier string `json:"codeVerifier"`
	Issuer       string `json:"iss,omitempty"`
}

// DeviceSignIn is a device authorization in progress (RFC 8628): the person
// opens VerificationURI and types UserCode; the client polls with Handle.
type DeviceSignIn struct {
	UserCode                string    `json:"userCode"`
	VerificationURI         string    `json:"verificationUri"`
	VerificationURIComplete string    `json:"verificationUriComplete,omitempty"`
	ExpiresAt               time.Time `json:"expiresAt"`
	Interval                int       `json:"interval"`
	Handle                  string    `json:"handle"`
}

// DevicePoll asks whether a device sign-in was approved.
type DevicePoll struct {
	Handle string `json:"handle"`
}

// SignInPending is the 202 answer of a device poll not approved yet.
type SignInPending struct {
	State    string `json:"state"` // "pending"
	Interval int    `json:"interval"`
}

// SignedIn is the personal token a sign-in gives, and who it is for.
type SignedIn struct {
	Token     string     `json:"token"`
	ExpiresAt *time.Time `json:"expiresAt"`
	User      string     `json:"user"`
	Role      string     `json:"role"`
	Groups    []string   `json:"groups"`
	Provider  string     `json:"provider"`
}

func oidcPath(parts ...string) string {
	p := OIDCPath
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// ListOIDCProviders lists the providers (admin).
func (c *Client) ListOIDCProviders(ctx context.Context) ([]OIDCProvider, error) {
	var out List[OIDCProvider]
	err := c.Do(ctx, http.MethodGet, OIDCPath, nil, &out)
	return out.Items, err
}

// SetOIDCProvider creates or replaces a provider (admin).
func (c *Client) SetOIDCProvider(ctx context.Context, name string, req OIDCProviderRequest) (OIDCProvider, error) {
	var out OIDCProvider
	err := c.Do(ctx, http.MethodPut, oidcPath(name), req, &out)
	return out, err
}

// RemoveOIDCProvider removes a provider (admin).
func (c *Client) RemoveOIDCProvider(ctx context.Context, name string) error {
	return c.Do(ctx, http.MethodDelete, oidcPath(name), nil, nil)
}

// SignInProviders lists the providers one may sign in with (no token needed).
func (c *Client) SignInProviders(ctx context.Context) ([]SignInProvider, error) {
	var out List[SignInProvider]
	err := c.Do(ctx, http.MethodGet, SignInPath, nil, &out)
	return out.Items, err
}

// StartSignIn starts a browser sign-in with a provider.
func (c *Client) StartSignIn(ctx context.Context, provider, redirectURI string) (SignInStart, error) {
	var out SignInStart
	err := c.Do(ctx, http.MethodPost, oidcPath(provider, "start"), SignInStartRequest{RedirectURI: redirectURI}, &out)
	return out, err
}

// FinishSignIn hands the provider's answer to the cluster for a token.
func (c *Client) FinishSignIn(ctx context.Context, provider string, cb SignInCallback) (SignedIn, error) {
	var out SignedIn
	err := c.Do(ctx, http.MethodPost, oidcPath(provider, "callback"), cb, &out)
	return out, err
}

// StartDeviceSignIn starts a device sign-in with a provider.
func (c *Client) StartDeviceSignIn(ctx context.Context, provider string) (DeviceSignIn, error) {
	var out DeviceSignIn
	err := c.Do(ctx, http.MethodPost, oidcPath(provider, "device"), struct{}{}, &out)
	return out, err
}

// PollDeviceSignIn asks once whether a device sign-in was approved: the
// token when it was, nil while it is pending.
func (c *Client) PollDeviceSignIn(ctx context.Context, provider, handle string) (*SignedIn, error) {
	var raw struct {
		SignedIn
		State string `json:"state"`
	}
	if err := c.Do(ctx, http.MethodPost, oidcPath(provider, "device", "token"), DevicePoll{Handle: handle}, &raw); err != nil {
		return nil, err
	}
	if raw.Token == "" {
		return nil, nil
	}
	return &raw.SignedIn, nil
}
