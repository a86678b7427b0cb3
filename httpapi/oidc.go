package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/node/signin"
	"github.com/svc-project/svc/raftfsm"
)

// oidcAPI serves OpenID Connect providers, their users and sign-ins.
type oidcAPI struct {
	*core
	signin SignIn
	keys   auth.Keys
}

// SignIn runs sign-ins through OpenID Connect providers (node/signin).
type SignIn interface {
	Start(ctx context.Context, provider, redirect, ownCallback string) (api.SignInStart, error)
	Finish(ctx context.Context, provider string, cb api.SignInCallback) (signin.Identity, error)
	StartDevice(ctx context.Context, provider string) (api.DeviceSignIn, error)
	PollDevice(ctx context.Context, provider, handle string) (signin.Identity, bool, error)
}

// routes: the providers (admin) and the sign-in steps (no token: they
// are how a person gets one). A sign-in's last step records the person,
// so it runs on the leader; the others on any peer.
func (s *oidcAPI) routes(srv *Server) {
	const one = api.OIDCPath + "/:provider"
	srv.handle(Route{Method: http.MethodGet, Path: api.OIDCPath, Rule: RuleAdmin}, s.listOIDCProviders)
	srv.handle(Route{Method: http.MethodPut, Path: one, Rule: RuleAdmin, Write: true, Target: Leader}, s.setOIDCProvider)
	srv.handle(Route{Method: http.MethodDelete, Path: one, Rule: RuleAdmin, Write: true, Target: Leader}, s.deleteOIDCProvider)
	srv.handle(Route{Method: http.MethodGet, Path: api.SignInPath, Rule: RuleOpen}, s.signInProviders)
	srv.handle(Route{Method: http.MethodGet, Path: api.UsersPath, Rule: RuleAdmin}, s.listUsers)
	srv.handle(Route{Method: http.MethodPost, Path: one + "/start", Rule: RuleOpen, SignIn: true}, s.startSignIn)
	srv.handle(Route{Method: http.MethodPost, Path: one + "/callback", Rule: RuleOpen, Write: true, Target: Leader, SignIn: true}, s.finishSignIn)
	srv.handle(Route{Method: http.MethodPost, Path: one + "/device", Rule: RuleOpen, SignIn: true}, s.startDeviceSignIn)
	srv.handle(Route{Method: http.MethodPost, Path: one + "/device/token", Rule: RuleOpen, Write: true, Target: Leader, SignIn: true}, s.pollDeviceSignIn)
}

func oidcToAPI(p raftfsm.OIDCProvider) api.OIDCProvider {
	return api.OIDCProvider{
		Name: p.Name, Issuer: p.Issuer, ClientID: p.ClientID, ClientSecretSet: len(p.SealedClientSecret) > 0,
		Scopes: nonNil(p.Scopes, signin.DefaultScopes), UsernameClaim: p.UsernameClaim, GroupsClaim: p.GroupsClaim,
		AdminGroups: nonNil(p.AdminGroups, nil), AllowedGroups: nonNil(p.AllowedGroups, nil),
		AllowedDomains: nonNil(p.AllowedDomains, nil), AllowedUsers: nonNil(p.AllowedUsers, nil), AllowAnyone: p.AllowAnyone, CreatedAt: p.CreatedAt,
	}
}

func nonNil(v, def []string) []string {
	if len(v) == 0 {
		v = def
	}
	return append([]string{}, v...)
}

func (s *oidcAPI) listOIDCProviders(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	items := []api.OIDCProvider{}
	for _, p := range s.replica.FSM().OIDCProviders() {
		items = append(items, oidcToAPI(p))
	}
	writeJSON(w, http.StatusOK, api.List[api.OIDCProvider]{Items: items})
	return nil
}

func (s *oidcAPI) setOIDCProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	name := p.ByName("provider")
	var req api.OIDCProviderRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := api.ValidateName("provider", name, api.MaxNameLen); err != nil {
		return badRequest("%s", err)
	}
	if err := signin.CheckIssuerURL(req.Issuer); err != nil {
		return badRequest("field \"issuer\": %v", err)
	}
	if req.ClientID == "" || len(req.ClientID) > api.MaxOIDCClientID {
		return badRequest("field \"clientId\": the client id the provider gave this cluster, at most %d bytes", api.MaxOIDCClientID)
	}
	if len(req.ClientSecret) > api.MaxOIDCSecret {
		return badRequest("field \"clientSecret\": at most %d bytes", api.MaxOIDCSecret)
	}
	if len(req.Scopes) > 0 && !slices.Contains(req.Scopes, "openid") {
		return badRequest("field \"scopes\": must include \"openid\"")
	}
	rec := raftfsm.OIDCProvider{
		Name: name, Issuer: req.Issuer, ClientID: req.ClientID, Scopes: req.Scopes,
		UsernameClaim: cmp.Or(req.UsernameClaim, signin.DefaultUsernameClaim), GroupsClaim: cmp.Or(req.GroupsClaim, signin.DefaultGroupsClaim),
		AdminGroups: req.AdminGroups, AllowedGroups: req.AllowedGroups, AllowedDomains: req.AllowedDomains, AllowedUsers: req.AllowedUsers,
		AllowAnyone: req.AllowAnyone, CreatedAt: time.Now().UTC().Truncate(time.Second),
	}
	if !rec.Admits() && len(rec.AdminGroups) == 0 {
		return badRequest("provider %q would let nobody in: name who may sign in (allowedGroups, allowedDomains, allowedUsers, adminGroups), or allowAnyone to admit every account the provider knows (for Google, every Google account in the world)", name)
	}
	if req.ClientSecret != "" {
		sealed, err := auth.Seal(s.keys.SealKey(), []byte(req.ClientSecret), signin.SecretAAD(name))
		if err != nil {
			return err
		}
		rec.SealedClientSecret = sealed
	}
	_, existed := s.replica.FSM().OIDCProvider(name)
	v, err := s.apply(r.Context(), raftfsm.TypeOIDCProviderSet, raftfsm.OIDCProviderSet{Provider: rec})
	if err != nil {
		return err
	}
	code := http.StatusCreated
	if existed {
		code = http.StatusOK
	}
	writeJSON(w, code, oidcToAPI(*v.(*raftfsm.OIDCProvider)))
	return nil
}

func (s *oidcAPI) deleteOIDCProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if _, err := s.apply(r.Context(), raftfsm.TypeOIDCProviderDel, raftfsm.OIDCProviderDelete{Name: p.ByName("provider")}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// listUsers answers the cluster's users, with who each person is to their
// provider.
func (s *oidcAPI) listUsers(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	items := []api.User{}
	for _, u := range s.replica.FSM().Users() {
		items = append(items, api.User{Name: u.Name, Admin: u.Admin, Provider: u.Provider, Issuer: u.Issuer, Subject: u.Subject,
			Groups: nonNil(u.Groups, nil), CreatedAt: u.CreatedAt, SignedInAt: u.SignedInAt})
	}
	writeJSON(w, http.StatusOK, api.List[api.User]{Items: items})
	return nil
}

func (s *oidcAPI) signInProviders(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	items := []api.SignInProvider{}
	for _, p := range s.replica.FSM().OIDCProviders() {
		items = append(items, api.SignInProvider{Name: p.Name, Issuer: p.Issuer})
	}
	writeJSON(w, http.StatusOK, api.List[api.SignInProvider]{Items: items})
	return nil
}

func (s *oidcAPI) needSignIn() error {
	if s.signin == nil {
		return unavailable("5", "this peer does not run sign-ins")
	}
	return nil
}

func (s *oidcAPI) startSignIn(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.SignInStartRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := s.needSignIn(); err != nil {
		return err
	}
	out, err := s.signin.Start(r.Context(), p.ByName("provider"), req.RedirectURI, ownCallback(r))
	if err != nil {
		return signInError(err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *oidcAPI) finishSignIn(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.SignInCallback
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := s.needSignIn(); err != nil {
		return err
	}
	id, err := s.signin.Finish(r.Context(), p.ByName("provider"), req)
	if err != nil {
		return signInError(err)
	}
	return s.signedIn(w, r, id)
}

func (s *oidcAPI) startDeviceSignIn(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := s.needSignIn(); err != nil {
		return err
	}
	out, err := s.signin.StartDevice(r.Context(), p.ByName("provider"))
	if err != nil {
		return signInError(err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *oidcAPI) pollDeviceSignIn(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.DevicePoll
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := s.needSignIn(); err != nil {
		return err
	}
	id, pending, err := s.signin.PollDevice(r.Context(), p.ByName("provider"), req.Handle)
	if err != nil {
		return signInError(err)
	}
	if pending {
		writeJSON(w, http.StatusAccepted, api.SignInPending{State: "pending", Interval: 5})
		return nil
	}
	return s.signedIn(w, r, id)
}

// signedIn records the person (created at their first sign-in, their role
// and groups replaced at each) and answers their personal token.
func (s *oidcAPI) signedIn(w http.ResponseWriter, r *http.Request, id signin.Identity) error {
	now := time.Now().UTC().Truncate(time.Second)
	v, err := s.apply(r.Context(), raftfsm.TypeUserSignIn, raftfsm.UserSignIn{Name: id.User, Admin: id.Admin, Groups: id.Groups, Provider: id.Provider, Time: now,
		Issuer: id.Issuer, Subject: id.Subject})
	if err != nil {
		return err
	}
	u := v.(*raftfsm.User)
	role := auth.RoleUser
	if u.Admin {
		role = auth.RoleAdmin
	}
	ok, clusterID := s.replica.FSM().Initialized()
	if !ok {
		return unavailable("5", "the cluster is not initialised yet")
	}
	tok, exp, err := auth.Sign(s.keys.SigningKey(), clusterID, auth.Principal{Kind: auth.KindUser, Name: u.Name, Role: role, UID: u.UID}, auth.PersonalTTL, time.Now())
	if err != nil {
		return err
	}
	s.log.Info("signed in", "user", u.Name, "provider", id.Provider, "role", role, "groups", len(u.Groups))
	writeJSON(w, http.StatusOK, api.SignedIn{Token: tok, ExpiresAt: exp, User: u.Name, Role: role, Groups: nonNil(u.Groups, nil), Provider: id.Provider})
	return nil
}

// ownCallback is the address of the web UI's callback as the request
// reached this peer (the only redirect besides loopback a sign-in may use).
func ownCallback(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/ui/callback"
}

// signInError answers a failed sign-in step.
func signInError(err error) error {
	switch {
	case errors.Is(err, signin.ErrNoProvider):
		return notFound("%s", err)
	case errors.Is(err, signin.ErrInvalid):
		return badRequest("%s", err)
	case errors.Is(err, signin.ErrRefused):
		return errorf(http.StatusUnauthorized, api.ReasonUnauthorized, "%s", err)
	case errors.Is(err, signin.ErrNotAllowed):
		return errorf(http.StatusForbidden, api.ReasonForbidden, "%s", err)
	case errors.Is(err, signin.ErrUnavailable):
		return unavailable("10", "%s", err)
	}
	return err
}
