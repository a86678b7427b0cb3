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
	Name               string    `json:"name"`
	Issuer             string    `json:"issuer"`
	ClientID           string    `json:"clientId"`
	SealedClientSecret []byte    `json:"sealedClientSecret,omitempty"`
	Scopes             []string  `json:"scopes"`
	UsernameClaim      string    `json:"usernameClaim"`
	GroupsClaim        string    `json:"groupsClaim"`
	AdminGroups        []string  `json:"adminGroups,omitempty"`
	AllowedGroups      []string  `json:"allowedGroups,omitempty"`
	CreatedAt          time.Time `json:"createdAt"`
}

func (p *OIDCProvider) sortKey() string { return p.Name }

func (p *OIDCProvider) clone() *OIDCProvider {
	c := *p
	c.SealedClientSecret = slices.Clone(p.SealedClientSecret)
	c.Scopes = slices.Clone(p.Scopes)
	c.AdminGroups = slices.Clone(p.AdminGroups)
	c.AllowedGroups = slices.Clone(p.AllowedGroups)
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
	u, ok := s.Users[c.Name]
	if !ok {
		u = &User{Name: c.Name, CreatedAt: c.Time, UID: index}
		s.Users[c.Name] = u
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
