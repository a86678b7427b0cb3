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

// A run's answer comes when its program ends: RunVM waits for it past the
// client's HTTP timeout, which still bounds every other call.
func TestClient_RunVM_waits_past_the_http_timeout(t *testing.T) {
	arrived, release := make(chan string, 2), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.Method + " " + r.URL.Path
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"exitCode":0,"stdout":"done"}`))
	}))
	defer srv.Close()
	c := &Client{BaseURL: srv.URL, HTTP: &http.Client{Timeout: 200 * time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type ran struct {
		r   RunResult
		err error
	}
	done := make(chan ran, 1)
	go func() {
		secs := 5
		r, err := c.RunVM(ctx, "default", "vm1", RunRequest{Command: []string{"sleep", "1"}, TimeoutSeconds: &secs})
		done <- ran{r, err}
	}()
	if got := <-arrived; got != "POST /api/v1/namespaces/default/vms/vm1/run" {
		t.Fatalf("the run arrived as %q", got)
	}
	// another call on the same client gives up at its timeout
	if _, err := c.GetVM(ctx, "default", "vm1"); err == nil {
		t.Fatal("a call held past the client's timeout returned no error")
	}
	<-arrived
	close(release)
	got := <-done
	if got.err != nil || got.r.Stdout != "done" {
		t.Fatalf("the run held past the client's timeout: %+v %v", got.r, got.err)
	}
	if c.HTTP.Timeout != 200*time.Millisecond {
		t.Fatalf("the client's own timeout changed to %s", c.HTTP.Timeout)
	}
}
