package raftfsm

import (
	"net/url"
	"slices"
	"time"

	"github.com/svc-project/svc/api"
)

// OIDCProvider is an OpenID Connect provider people sign in with. Its
// client secret is sealed by the peer that received it (as registry
// passwords are) before it is proposed.
type OIDCProvider struct {
	Name               string   `json:"name"`
	Issuer             string   `json:"issuer"`
	ClientID           string   `json:"clientId"`
	SealedClientSecret []byte   `json:"sealedClientSecret,omitempty"`
	Scopes             []string `json:"scopes"`
	UsernameClaim      string   `json:"usernameClaim"`
	GroupsClaim        string   `json:"groupsClaim"`
	AdminGroups        []string `json:"adminGroups,omitempty"`
	AllowedGroups      []string `json:"allowedGroups,omitempty"`
	// AllowedDomains admit people whose ID token's "hd" claim (a Google
	// Workspace domain, never read from an address) is one of them;
	// AllowedUsers admit people by username. AllowAnyone admits everyone
	// the provider knows: without it, or one of the allowed lists, only
	// members of AdminGroups sign in.
	AllowedDomains []string  `json:"allowedDomains,omitempty"`
	AllowedUsers   []string  `json:"allowedUsers,omitempty"`
	AllowAnyone    bool      `json:"allowAnyone,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
}

// Admits reports whether the provider lets anyone in beyond its admin
// groups.
func (p *OIDCProvider) Admits() bool {
	return p.AllowAnyone || len(p.AllowedGroups) > 0 || len(p.AllowedDomains) > 0 || len(p.AllowedUsers) > 0
}

func (p *OIDCProvider) sortKey() string { return p.Name }

func (p *OIDCProvider) clone() *OIDCProvider {
	c := *p
	c.SealedClientSecret = slices.Clone(p.SealedClientSecret)
	c.Scopes = slices.Clone(p.Scopes)
	c.AdminGroups = slices.Clone(p.AdminGroups)
	c.AllowedGroups = slices.Clone(p.AllowedGroups)
	c.AllowedDomains = slices.Clone(p.AllowedDomains)
	c.AllowedUsers = slices.Clone(p.AllowedUsers)
	return &c
}

// OIDCProviderSet adds or replaces a provider.
type OIDCProviderSet struct {
	Provider OIDCProvider `json:"provider"`
}

// OIDCProviderDelete removes a provider; the users who signed in with it
// stay until an admin removes them (their tokens last an hour at most).
type OIDCProviderDelete struct {
	Name string `json:"name"`
}

// UserSignIn records a person who signed in through a provider: created on
// the first sign-in (a new UID), its admin flag and groups replaced at each.
type UserSignIn struct {
	Name     string    `json:"name"`
	Admin    bool      `json:"admin"`
	Groups   []string  `json:"groups"`
	Provider string    `json:"provider"`
	Time     time.Time `json:"time"`
	// Issuer and Subject are the person (User.Issuer, User.Subject). A
	// sign-in without them is one written before they were kept.
	Issuer  string `json:"issuer,omitempty"`
	Subject string `json:"subject,omitempty"`
}

func checkGroups(field string, groups []string, most int) error {
	if len(groups) > most {
		return ruleErr(ErrInvalid, "%s: %d groups, at most %d", field, len(groups), most)
	}
	for _, g := range groups {
		if err := api.ValidateGroup(g); err != nil {
			return ruleErr(ErrInvalid, "%s: %s", field, err.Error())
		}
	}
	return nil
}

func (s *State) applyOIDCProviderSet(c OIDCProviderSet) (any, error) {
	p := c.Provider.clone()
	if err := api.ValidateName("provider", p.Name, api.MaxNameLen); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	u, err := url.Parse(p.Issuer)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(p.Issuer) > api.MaxOIDCRedirectURI:
		return nil, ruleErr(ErrInvalid, "issuer %q must be an https URL", p.Issuer)
	case p.ClientID == "" || len(p.ClientID) > api.MaxOIDCClientID:
		return nil, ruleErr(ErrInvalid, "client id must be 1 to %d bytes", api.MaxOIDCClientID)
	case len(p.SealedClientSecret) > api.MaxOIDCSecret+64:
		return nil, ruleErr(ErrInvalid, "client secret too long")
	case len(p.Scopes) > api.MaxOIDCScopes:
		return nil, ruleErr(ErrInvalid, "%d scopes, at most %d", len(p.Scopes), api.MaxOIDCScopes)
	case p.UsernameClaim == "" || len(p.UsernameClaim) > api.MaxOIDCClientID || len(p.GroupsClaim) > api.MaxOIDCClientID:
		return nil, ruleErr(ErrInvalid, "the username claim must be named, claims at most %d bytes", api.MaxOIDCClientID)
	}
	for _, sc := range p.Scopes {
		if sc == "" || len(sc) > api.MaxOIDCClientID {
			return nil, ruleErr(ErrInvalid, "a scope must be 1 to %d bytes", api.MaxOIDCClientID)
		}
	}
	if err := checkGroups("admin groups", p.AdminGroups, api.MaxOIDCGroups); err != nil {
		return nil, err
	}
	if err := checkGroups("allowed groups", p.AllowedGroups, api.MaxOIDCGroups); err != nil {
		return nil, err
	}
	if len(p.AllowedDomains) > api.MaxOIDCGroups || len(p.AllowedUsers) > api.MaxOIDCGroups {
		return nil, ruleErr(ErrInvalid, "allowed domains and users: at most %d each", api.MaxOIDCGroups)
	}
	for _, d := range p.AllowedDomains {
		if d == "" || len(d) > 253 {
			return nil, ruleErr(ErrInvalid, "allowed domain %q: 1 to 253 bytes", d)
		}
	}
	for _, n := range p.AllowedUsers {
		if err := api.ValidateUserName("allowed user", n); err != nil {
			return nil, ruleErr(ErrInvalid, "%s", err.Error())
		}
	}
	if _, ok := s.OIDCProviders[p.Name]; !ok && len(s.OIDCProviders) >= api.MaxOIDCProviders {
		return nil, ruleErr(ErrConflict, "the cluster has %d providers, the most it may have", len(s.OIDCProviders))
	}
	s.OIDCProviders[p.Name] = p
	return p.clone(), nil
}

func (s *State) applyOIDCProviderDelete(c OIDCProviderDelete) (any, error) {
	if _, ok := s.OIDCProviders[c.Name]; !ok {
		return nil, ruleErr(ErrNotFound, "OpenID Connect provider %q not found", c.Name)
	}
	delete(s.OIDCProviders, c.Name)
	return nil, nil
}

// maxSubject bounds a person's subject (OIDC Core: at most 255 ASCII
// characters).
const maxSubject = 255

func (s *State) applyUserSignIn(index uint64, c UserSignIn) (any, error) {
	if err := api.ValidateUserName("user", c.Name); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if err := checkGroups("groups", c.Groups, api.MaxSignInGroups); err != nil {
		return nil, err
	}
	if _, ok := s.OIDCProviders[c.Provider]; !ok {
		return nil, ruleErr(ErrNotFound, "OpenID Connect provider %q not found", c.Provider)
	}
	if c.Subject != "" && c.Issuer == "" || len(c.Subject) > maxSubject || len(c.Issuer) > api.MaxOIDCRedirectURI {
		return nil, ruleErr(ErrInvalid, "a person is an issuer and a subject of at most %d bytes", maxSubject)
	}
	u, ok := s.Users[c.Name]
	switch {
	case !ok:
		u = &User{Name: c.Name, CreatedAt: c.Time, UID: index}
		s.Users[c.Name] = u
	case c.Subject == "":
		// written before people were kept by issuer and subject
	case u.Subject != "" && (u.Issuer != c.Issuer || u.Subject != c.Subject):
		return nil, ruleErr(ErrConflict, "user %q is another person (subject %q of %s): a second identity may not take the name; an admin removes or renames one of them", c.Name, u.Subject, u.Issuer)
	case u.Unclaimed:
		// a binding named it before anyone had it: this person takes it
	case u.Subject == "" && u.Provider == "":
		return nil, ruleErr(ErrConflict, "user %q was named by root on a host: a person signing in through provider %q may not take the name", c.Name, c.Provider)
	case u.Subject == "" && u.Provider != c.Provider:
		return nil, ruleErr(ErrConflict, "user %q signed in through provider %q: a person of provider %q may not take the name", c.Name, u.Provider, c.Provider)
	}
	if c.Subject != "" {
		u.Issuer, u.Subject, u.Unclaimed = c.Issuer, c.Subject, false
	}
	u.Admin, u.Groups, u.Provider = c.Admin, slices.Clone(c.Groups), c.Provider
	t := c.Time
	u.SignedInAt = &t
	return u.clone(), nil
}

func oidcProviders(s *State) map[string]*OIDCProvider { return s.OIDCProviders }

// OIDCProviders returns the providers, sorted by name.
func (f *FSM) OIDCProviders() []OIDCProvider { return list(f, oidcProviders, nil) }

// OIDCProvider returns one provider.
func (f *FSM) OIDCProvider(name string) (OIDCProvider, bool) { return get(f, oidcProviders, name) }

// GroupBound reports whether a role binding names any of groups.
func (f *FSM) GroupBound(groups []string) bool {
	if len(groups) == 0 {
		return false
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, rb := range f.state.RoleBindings {
		for _, g := range groups {
			if slices.Contains(rb.Groups, g) {
				return true
			}
		}
	}
	return false
}
