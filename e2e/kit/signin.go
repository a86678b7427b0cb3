package kit

import (
	"net/http"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/oidcprovider"
)

// WithOrigin sends every request with the Origin a browser page would.
type WithOrigin struct{ Origin string }

func (o WithOrigin) RoundTrip(r *http.Request) (*http.Response, error) {
	if o.Origin != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Origin", o.Origin)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// People of the test directory: alice in dev, bob an admin through
// ops-admins, carol in no group.
var People = []oidcprovider.User{
	{Username: "alice", Password: "alice-pw", Email: "Alice@Example.com", Groups: []string{"dev"}},
	{Username: "bob", Password: "bob-pw", Email: "bob@example.com", Groups: []string{"ops-admins"}},
	{Username: "carol", Password: "carol-pw", Email: "carol@example.com"},
}

// SetProvider configures the test provider as "corp".
func SetProvider(t *testing.T, admin *api.Client, op *oidcprovider.Provider, allowed ...string) {
	t.Helper()
	_, err := admin.SetOIDCProvider(Ctx(t), "corp", api.OIDCProviderRequest{
		Issuer: op.Issuer, ClientID: op.ClientID, ClientSecret: op.ClientSecret, Scopes: []string{"openid", "email", "profile", "groups"},
		AdminGroups: []string{"ops-admins"}, AllowedGroups: allowed, AllowAnyone: len(allowed) == 0,
	})
	if err != nil {
		t.Fatalf("set provider: %v", err)
	}
}
