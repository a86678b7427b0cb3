package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// Reads answered 503 with Retry-After are tried again within the bound;
// writes never are (one may have been applied before its 503).
func TestClient_retries_unavailable_reads_only(t *testing.T) {
	cases := []struct {
		name      string
		method    string
		retry     time.Duration
		wantCalls int32
		wantErr   bool
	}{
		{name: "read retried until served", method: http.MethodGet, retry: 10 * time.Second, wantCalls: 3},
		{name: "read without retries", method: http.MethodGet, wantCalls: 1, wantErr: true},
		{name: "write never retried", method: http.MethodPost, retry: 10 * time.Second, wantCalls: 1, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) < 3 {
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = w.Write([]byte(`{"kind":"Status","code":503,"reason":"ServiceUnavailable","message":"catching up"}`))
					return
				}
				_, _ = w.Write([]byte(`{"items":[]}`))
			}))
			defer srv.Close()
			cl := NewClient(srv.URL, "t")
			cl.RetryUnavailable = c.retry
			err := cl.Do(context.Background(), c.method, "/x", nil, nil)
			if (err != nil) != c.wantErr || calls.Load() != c.wantCalls {
				t.Fatalf("err %v after %d calls", err, calls.Load())
			}
		})
	}
}
