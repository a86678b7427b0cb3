package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/svc-project/svc/auth"
)

// BenchmarkAuth measures the token check on its own (signature, times,
// subject lookup in the replica), next to whole requests on an open route
// and on an authenticated one, through the real router.
func BenchmarkAuth(b *testing.B) {
	t := &testing.T{}
	fb := newFakeBackend(t, true)
	s := New(fakeConfig(fb, Config{}))
	h := s.Handler()
	tok := adminToken(b)
	header := "Bearer " + tok
	b.Run("token-check-first-use", func(b *testing.B) {
		for range b.N {
			a := auth.NewAuthenticator(fb.fsm, fb) // nothing verified yet: a full signature check
			if _, err := a.Authenticate(header, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("token-check", func(b *testing.B) {
		a := auth.NewAuthenticator(fb.fsm, fb)
		for range b.N {
			if _, err := a.Authenticate(header, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []struct {
		name, path, token string
	}{
		{"open-route", "/api/v1/cluster-info", ""},
		{"authenticated-route", "/api/v1/namespaces/svc-default/nodes", tok},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				req := httptest.NewRequest(http.MethodGet, c.path, nil)
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", c.path, w.Code, w.Body)
				}
			}
		})
	}
}
