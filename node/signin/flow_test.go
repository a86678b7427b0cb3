package signin

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/raftfsm"
)

// op is a provider as the common ones are set up by default: its ID token
// carries "sub" only (the rest comes from UserInfo), its client has a
// secret it must present at the device endpoint too (RFC 8628 3.1), and it
// names itself in its answers (RFC 9207). What its UserInfo answers is the
// test's to say.
type op struct {
	srv        *httptest.Server
	key        *rsa.PrivateKey
	tokenCalls atomic.Int32

	mu       sync.Mutex
	nonce    string
	userInfo func(w http.ResponseWriter)
}

func newOP(t *testing.T) *op {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	o := &op{key: key}
	o.userInfo = func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"sub": "person-1", "email": "Alice@Corp.example", "email_verified": true, "groups": []string{"dev"}})
	}
	authed := func(r *http.Request) bool {
		id, secret, ok := r.BasicAuth()
		return ok && id == "svc" && secret == "s3cret"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": o.srv.URL, "authorization_endpoint": o.srv.URL + "/auth", "token_endpoint": o.srv.URL + "/token",
			"userinfo_endpoint": o.srv.URL + "/userinfo", "device_authorization_endpoint": o.srv.URL + "/device",
			"jwks_uri": o.srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
			"authorization_response_iss_parameter_supported": true, "token_endpoint_auth_methods_supported": []string{"client_secret_basic"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("/device", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !authed(r) {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client", "error_description": "client authentication failed"})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"device_code": "dc-1", "user_code": "ABCD-EFGH", "verification_uri": o.srv.URL + "/activate", "expires_in": 600, "interval": 1})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		o.tokenCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if !authed(r) && r.FormValue("client_secret") != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_client"})
			return
		}
		o.mu.Lock()
		nonce := o.nonce
		o.mu.Unlock()
		now := time.Now()
		claims := map[string]any{"iss": o.srv.URL, "aud": "svc", "sub": "person-1", "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		if nonce != "" && r.FormValue("grant_type") == "authorization_code" {
			claims["nonce"] = nonce
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-1", "token_type": "Bearer", "expires_in": 3600, "id_token": sign(t, key, claims)})
	})
	mux.HandleFunc("/userinfo", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer at-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		o.mu.Lock()
		ui := o.userInfo
		o.mu.Unlock()
		ui(w)
	})
	o.srv = httptest.NewServer(mux)
	t.Cleanup(o.srv.Close)
	return o
}

func (o *op) provider() raftfsm.OIDCProvider {
	return raftfsm.OIDCProvider{Name: "corp", Issuer: o.srv.URL, ClientID: "svc", UsernameClaim: "email", GroupsClaim: "groups", AllowedGroups: []string{"dev"}}
}

func (o *op) service(t *testing.T, timeout time.Duration) *Service {
	t.Helper()
	p := o.provider()
	sealed, err := sealSecret(p.Name, "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	p.SealedClientSecret = sealed
	return New(Config{State: fakeState{"corp": p}, Keys: fakeKeys{}, Timeout: timeout})
}

// start begins a browser sign-in and has the provider's next ID token carry
// its nonce, as the provider would once the person signed in.
func (o *op) start(t *testing.T, s *Service) api.SignInStart {
	t.Helper()
	st, err := s.Start(context.Background(), "corp", "http://127.0.0.1:9/callback", "")
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.open("state", "corp", st.State, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.AuthURL, st.CodeVerifier) || strings.Contains(st.State, st.CodeVerifier) {
		t.Fatal("the code verifier travels in the address")
	}
	o.mu.Lock()
	o.nonce = v.Nonce
	o.mu.Unlock()
	return st
}

// The code verifier stays with the client: the provider's answer (code and
// state), replayed without it or with another, redeems nothing and reaches
// no provider; redeemed once, it redeems nothing again; the issuer the
// answer names must be the provider's. The person's claims come from
// UserInfo when the ID token has only "sub".
func TestFinish_pkce_held_by_the_client(t *testing.T) {
	o := newOP(t)
	s := o.service(t, 2*time.Second)
	ctx := context.Background()
	st := o.start(t, s)
	for _, tc := range []struct {
		name string
		cb   api.SignInCallback
		says string
	}{
		{"the redirect address alone", api.SignInCallback{State: st.State, Code: "c-1", Issuer: o.srv.URL}, "codeVerifier"},
		{"another client's verifier", api.SignInCallback{State: st.State, Code: "c-1", CodeVerifier: strings.Repeat("x", 43), Issuer: o.srv.URL}, "codeVerifier"},
		{"another issuer named", api.SignInCallback{State: st.State, Code: "c-1", CodeVerifier: st.CodeVerifier, Issuer: "https://evil.example"}, "mix-up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Finish(ctx, "corp", tc.cb)
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want refused saying %q", err, tc.says)
			}
			if n := o.tokenCalls.Load(); n != 0 {
				t.Fatalf("%d token requests reached the provider", n)
			}
		})
	}
	st = o.start(t, s) // the mix-up spent the last one
	id, err := s.Finish(ctx, "corp", api.SignInCallback{State: st.State, Code: "c-2", CodeVerifier: st.CodeVerifier, Issuer: o.srv.URL})
	if err != nil || id.User != "alice@corp.example" || id.Subject != "person-1" || id.Issuer != o.srv.URL || len(id.Groups) != 1 {
		t.Fatalf("the sign-in: %+v %v", id, err)
	}
	if _, err := s.Finish(ctx, "corp", api.SignInCallback{State: st.State, Code: "c-2", CodeVerifier: st.CodeVerifier, Issuer: o.srv.URL}); !errors.Is(err, ErrRefused) {
		t.Fatalf("the same answer redeemed twice: %v", err)
	}
}

// What UserInfo answers is checked: another subject than the ID token's
// (OIDC Core 5.3.2), not JSON, over its bound, down, slow: each a clear
// refusal or unavailability.
func TestFinish_userinfo_cases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		err    error
		says   string
	}{
		{"another subject", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"sub": "person-2", "email": "bob@corp.example", "groups": []string{"dev"}})
		}, ErrRefused, "subject"},
		{"not JSON", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>"))
		}, ErrRefused, "not JSON"},
		{"huge", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"sub":"person-1","x":"` + strings.Repeat("a", maxUserInfo) + `"}`))
		}, ErrRefused, "over"},
		{"down", func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }, ErrUnavailable, "503"},
		{"slow", func(w http.ResponseWriter) { time.Sleep(3 * time.Second) }, ErrUnavailable, "did not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOP(t)
			o.userInfo = tc.answer
			s := o.service(t, time.Second)
			st := o.start(t, s)
			start := time.Now()
			_, err := s.Finish(context.Background(), "corp", api.SignInCallback{State: st.State, Code: "c", CodeVerifier: st.CodeVerifier, Issuer: o.srv.URL})
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("got %v, want %v saying %q", err, tc.err, tc.says)
			}
			if d := time.Since(start); d > 2500*time.Millisecond {
				t.Fatalf("took %s", d)
			}
		})
	}
}

// A client the provider gave a secret authenticates at the device
// endpoint (RFC 8628 3.1), and its handle signs one person in once.
func TestDevice_confidential_client(t *testing.T) {
	o := newOP(t)
	s := o.service(t, 2*time.Second)
	ctx := context.Background()
	d, err := s.StartDevice(ctx, "corp")
	if err != nil || d.UserCode != "ABCD-EFGH" {
		t.Fatalf("device start: %+v %v", d, err)
	}
	id, pending, err := s.PollDevice(ctx, "corp", d.Handle)
	if err != nil || pending || id.User != "alice@corp.example" {
		t.Fatalf("poll: %+v %v %v", id, pending, err)
	}
	if _, _, err := s.PollDevice(ctx, "corp", d.Handle); !errors.Is(err, ErrRefused) {
		t.Fatalf("the handle polled again: %v", err)
	}
}

// sealSecret seals a client secret as the API does, with fakeKeys' key.
func sealSecret(provider, secret string) ([]byte, error) {
	return auth.Seal(fakeKeys{}.SealKey(), []byte(secret), SecretAAD(provider))
}

// A code the provider does not know costs a provider that takes one way
// of client authentication one token request (never a second guess).
func TestFinish_one_token_request_per_code(t *testing.T) {
	o := newOP(t)
	s := o.service(t, 2*time.Second)
	st := o.start(t, s)
	before := o.tokenCalls.Load()
	o.mu.Lock()
	o.nonce = "another sign-in's" // the provider answers, but not for this sign-in
	o.mu.Unlock()
	if _, err := s.Finish(context.Background(), "corp", api.SignInCallback{State: st.State, Code: "made-up", CodeVerifier: st.CodeVerifier, Issuer: o.srv.URL}); !errors.Is(err, ErrRefused) {
		t.Fatalf("got %v", err)
	}
	if n := o.tokenCalls.Load() - before; n != 1 {
		t.Fatalf("%d token requests for one code", n)
	}
}
