package signin

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/poll"
)

// issuer is a provider's discovery document and keys, served on loopback,
// and the key it signs with: enough of a provider to verify ID tokens.
type issuer struct {
	srv   *httptest.Server
	delay time.Duration

	mu  sync.Mutex
	key *rsa.PrivateKey
	kid string
}

// current returns the key the issuer signs with now, and its id.
func (is *issuer) current() (*rsa.PrivateKey, string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.key, is.kid
}

// rotate makes the issuer sign with a new key, and publish only it.
func (is *issuer) rotate(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.key, is.kid = key, is.kid+"+"
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key, kid: "k1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(is.delay):
		case <-r.Context().Done():
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.srv.URL, "authorization_endpoint": is.srv.URL + "/auth", "token_endpoint": is.srv.URL + "/token",
			"jwks_uri": is.srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		key, kid := is.current()
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"}}})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// sign makes an ID token with claims, signed by key (named k1).
func sign(t *testing.T, key *rsa.PrivateKey, claims map[string]any) string {
	t.Helper()
	return signKid(t, key, "k1", claims)
}

func signKid(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

type fakeState map[string]raftfsm.OIDCProvider

func (f fakeState) OIDCProvider(name string) (raftfsm.OIDCProvider, bool) {
	p, ok := f[name]
	return p, ok
}

type fakeKeys struct{}

func (fakeKeys) SigningKey() []byte { return nil }
func (fakeKeys) SealKey() []byte    { return make([]byte, 32) }

func TestVerify_refuses_what_is_not_this_sign_in(t *testing.T) {
	is := newIssuer(t)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	prov := raftfsm.OIDCProvider{Name: "corp", Issuer: is.srv.URL, ClientID: "svc", UsernameClaim: "email", GroupsClaim: "groups",
		AdminGroups: []string{"admins"}, AllowedGroups: []string{"dev"}}
	s := New(Config{State: fakeState{"corp": prov}, Keys: fakeKeys{}})
	now := time.Now()
	base := func(change map[string]any) map[string]any {
		c := map[string]any{"iss": is.srv.URL, "aud": "svc", "sub": "u1", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(),
			"nonce": "n-1", "email": "Dev@Example.com", "email_verified": true, "groups": []string{"dev"}}
		for k, v := range change {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	unsigned := func(claims map[string]any) string {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
		b, _ := json.Marshal(claims)
		return h + "." + base64.RawURLEncoding.EncodeToString(b) + "."
	}
	many := make([]string, 300)
	for i := range many {
		many[i] = fmt.Sprintf("g%d", i)
	}
	cases := []struct {
		name  string
		token string
		nonce string
		err   error
		says  string
	}{
		{"good", sign(t, is.key, base(nil)), "n-1", nil, ""},
		{"an admin", sign(t, is.key, base(map[string]any{"groups": []string{"admins"}})), "n-1", nil, ""},
		{"another issuer", sign(t, is.key, base(map[string]any{"iss": "https://other.example"})), "n-1", ErrRefused, "different provider"},
		{"another audience", sign(t, is.key, base(map[string]any{"aud": "someone-else"})), "n-1", ErrRefused, "audience"},
		{"expired", sign(t, is.key, base(map[string]any{"exp": now.Add(-time.Minute).Unix()})), "n-1", ErrRefused, "expired"},
		{"unsigned", unsigned(base(nil)), "n-1", ErrRefused, "does not verify"},
		{"signed by another key", sign(t, other, base(nil)), "n-1", ErrRefused, "does not verify"},
		{"another sign-in's nonce", sign(t, is.key, base(nil)), "n-2", ErrRefused, "nonce"},
		{"no e-mail", sign(t, is.key, base(map[string]any{"email": nil})), "n-1", ErrRefused, "no \"email\" claim"},
		{"an unverified e-mail", sign(t, is.key, base(map[string]any{"email_verified": false})), "n-1", ErrRefused, "not verified"},
		{"in no allowed group", sign(t, is.key, base(map[string]any{"groups": []string{"sales"}})), "n-1", ErrNotAllowed, "none of the groups"},
		{"too many groups", sign(t, is.key, base(map[string]any{"groups": many})), "n-1", ErrRefused, "at most"},
		{"groups not a list", sign(t, is.key, base(map[string]any{"groups": 7})), "n-1", ErrRefused, "not a list"},
		{"an unverified e-mail, as a string", sign(t, is.key, base(map[string]any{"email_verified": "false"})), "n-1", ErrRefused, "not verified"},
		{"a verified e-mail, as a string", sign(t, is.key, base(map[string]any{"email_verified": "true"})), "n-1", nil, ""},
		{"audiences of two, no authorized party", sign(t, is.key, base(map[string]any{"aud": []string{"svc", "other"}})), "n-1", ErrRefused, "authorized party"},
		{"audiences of two, this client authorized", sign(t, is.key, base(map[string]any{"aud": []string{"svc", "other"}, "azp": "svc"})), "n-1", nil, ""},
		{"issued to another client", sign(t, is.key, base(map[string]any{"azp": "other"})), "n-1", ErrRefused, "issued to"},
		{"no subject", sign(t, is.key, base(map[string]any{"sub": nil})), "n-1", ErrRefused, "subject"},
		{"Entra ID's groups overage", sign(t, is.key, base(map[string]any{"groups": nil, "hasgroups": true})), "n-1", ErrRefused, "overage"},
		{"Entra ID's overage pointer to Microsoft Graph", sign(t, is.key, base(map[string]any{"groups": nil, "_claim_names": map[string]any{"groups": "src1"}, "_claim_sources": map[string]any{"src1": map[string]any{"endpoint": "https://graph.microsoft.com/v1.0/users/u1/getMemberObjects"}}})), "n-1", ErrRefused, "overage"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := s.Verify(context.Background(), "corp", tc.token, tc.nonce)
			if tc.err == nil {
				if err != nil || id.User != "dev@example.com" || id.Provider != "corp" || id.Subject != "u1" || id.Issuer != is.srv.URL {
					t.Fatalf("got %+v, %v", id, err)
				}
				if id.Admin != strings.Contains(tc.name, "admin") {
					t.Fatalf("admin %v for %s", id.Admin, tc.name)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.err, tc.says)
			}
		})
	}
}

// The provider rotates its key: a token of the new key verifies (go-oidc
// fetches the keys again for a key id it does not know), one of the old
// key no longer does.
func TestVerify_follows_key_rotation(t *testing.T) {
	is := newIssuer(t)
	s := New(Config{State: fakeState{"corp": {Name: "corp", Issuer: is.srv.URL, ClientID: "svc", UsernameClaim: "email", AllowAnyone: true}}, Keys: fakeKeys{}})
	claims := map[string]any{"iss": is.srv.URL, "aud": "svc", "sub": "u1", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "email": "a@example.com", "groups": []string{}}
	oldKey, oldKid := is.current()
	if _, err := s.Verify(context.Background(), "corp", signKid(t, oldKey, oldKid, claims), ""); err != nil {
		t.Fatalf("before the rotation: %v", err)
	}
	is.rotate(t)
	newKey, newKid := is.current()
	if id, err := s.Verify(context.Background(), "corp", signKid(t, newKey, newKid, claims), ""); err != nil || id.User != "a@example.com" {
		t.Fatalf("a token of the new key: %+v, %v", id, err)
	}
	// go-oidc stores the new key set a moment after it answered with it:
	// the retired key's tokens are refused from then on.
	poll.For(t, "a token of the retired key refused", 5*time.Second, func() error {
		if _, err := s.Verify(context.Background(), "corp", signKid(t, oldKey, oldKid, claims), ""); !errors.Is(err, ErrRefused) {
			return fmt.Errorf("verified with %v", err)
		}
		return nil
	})
}

func TestVerify_slow_provider_is_bounded(t *testing.T) {
	is := newIssuer(t)
	is.delay = 5 * time.Second
	s := New(Config{State: fakeState{"corp": {Name: "corp", Issuer: is.srv.URL, ClientID: "svc", UsernameClaim: "email"}}, Keys: fakeKeys{}, Timeout: 200 * time.Millisecond})
	start := time.Now()
	_, err := s.Start(context.Background(), "corp", "http://127.0.0.1:9/callback", "")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s", d)
	}
}

func TestSealed_state_round_trip(t *testing.T) {
	s := New(Config{State: fakeState{}, Keys: fakeKeys{}})
	raw, err := s.seal("state", sealed{Provider: "corp", Nonce: "n", Expires: time.Now().Add(time.Minute).Unix()})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, kind, provider, raw string
		at                        time.Time
		err                       error
	}{
		{"as sealed", "state", "corp", raw, time.Now(), nil},
		{"for another provider", "state", "other", raw, time.Now(), ErrInvalid},
		{"as a device handle", "device", "corp", raw, time.Now(), ErrInvalid},
		{"altered", "state", "corp", raw[:len(raw)-3] + "AAA", time.Now(), ErrInvalid},
		{"expired", "state", "corp", raw, time.Now().Add(2 * time.Minute), ErrRefused},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := s.open(tc.kind, tc.provider, tc.raw, tc.at)
			if !errors.Is(err, tc.err) || (err == nil && v.Nonce != "n") {
				t.Fatalf("got %+v, %v; want %v", v, err, tc.err)
			}
		})
	}
}
