package github_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/svc-project/svc/runners/github"
	"github.com/svc-project/svc/testkit/githubapi"
)

func appKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
}

func TestParseScope_org_and_repo(t *testing.T) {
	cases := []struct {
		in   string
		want github.Scope
		err  bool
	}{
		{"https://github.com/acme", github.Scope{Owner: "acme"}, false},
		{"https://github.com/acme/app/", github.Scope{Owner: "acme", Repo: "app"}, false},
		{"https://ghe.example.com/acme/app", github.Scope{Owner: "acme", Repo: "app"}, false},
		{"https://github.com/", github.Scope{}, true},
		{"https://github.com/a/b/c", github.Scope{}, true},
		{"acme/app", github.Scope{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := github.ParseScope(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("ParseScope = %+v, %v", got, err)
			}
		})
	}
}

// A runner pool's calls against the stand-in of GitHub's API, with a token
// and as a GitHub App (also at a GitHub Enterprise Server's /api/v3).
func TestClient_against_the_API(t *testing.T) {
	key, pemKey := appKey(t)
	for _, tc := range []struct {
		name   string
		prefix string
		auth   func(s *githubapi.Server) github.Auth
	}{
		{"token", "", func(s *githubapi.Server) github.Auth { return github.Auth{Token: s.Token} }},
		{"app on GHES", "/api/v3", func(s *githubapi.Server) github.Auth {
			return github.Auth{AppID: s.AppID, InstallationID: s.InstallationID, PrivateKey: pemKey}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := githubapi.Start(t, key, tc.prefix)
			c, err := github.New(github.Config{APIBase: s.URL, Scope: github.Scope{Owner: "acme", Repo: "app"}, Auth: tc.auth(s)})
			if err != nil {
				t.Fatal(err)
			}
			// 300 queued jobs in 2 runs: pages of 100 followed by their Link headers.
			var want int
			for range 2 {
				labels := make([][]string, 0, 150)
				for range 150 {
					labels = append(labels, []string{"self-hosted", "svc-linux"})
				}
				want += len(s.Queue(ctx, "acme/app", true, labels...))
			}
			jobs, err := c.QueuedJobs(ctx)
			if err != nil || len(jobs) != want || jobs[0].Repo != "acme/app" || !github.Matches([]string{"self-hosted", "svc-linux"}, jobs[0].Labels) {
				t.Fatalf("queued jobs: %d of %d, %v", len(jobs), want, err)
			}
			if n := s.Requests("GET /repos/{owner}/{repo}/actions/runs/{run}/jobs"); n != 4 {
				t.Fatalf("%d job listings for 2 runs of 150 jobs (two pages each)", n)
			}
			id, enc, err := c.JITConfig(ctx, "svc-app-1", []string{"self-hosted", "svc-linux"}, 0)
			if err != nil || id == 0 || enc == "" {
				t.Fatalf("jit config: %d %q %v", id, enc, err)
			}
			if _, _, err := c.JITConfig(ctx, "svc-app-1", []string{"svc-linux"}, 0); err == nil || !strings.Contains(err.Error(), "409") {
				t.Fatalf("a runner name in use: %v, want 409", err)
			}
			if _, _, err := c.JITConfig(ctx, "svc-app-2", nil, 0); err == nil || !strings.Contains(err.Error(), "422") {
				t.Fatalf("no labels: %v, want 422", err)
			}
			job, err := s.Start(ctx, enc)
			if err != nil || job == nil || job.Status != "in_progress" {
				t.Fatalf("the runner takes a job: %+v %v", job, err)
			}
			if err := c.RemoveRunner(ctx, id); !errors.Is(err, github.ErrRunnerBusy) {
				t.Fatalf("removing a runner that runs a job: %v, want ErrRunnerBusy", err)
			}
			if err := s.Complete(ctx, job.ID, "success"); err != nil {
				t.Fatal(err)
			}
			if err := c.RemoveRunner(ctx, id); err != nil {
				t.Fatalf("removing a runner already gone: %v", err)
			}
		})
	}
}

func TestClient_bad_credentials(t *testing.T) {
	key, _ := appKey(t)
	_, otherPEM := appKey(t)
	s := githubapi.Start(t, key, "")
	for _, auth := range []github.Auth{{Token: "wrong"}, {AppID: s.AppID, InstallationID: s.InstallationID, PrivateKey: otherPEM}} {
		c, err := github.New(github.Config{APIBase: s.URL, Scope: github.Scope{Owner: "acme"}, Auth: auth})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.JITConfig(context.Background(), "r", []string{"x"}, 0); err == nil || !strings.Contains(err.Error(), "401") {
			t.Fatalf("%+v: %v, want 401", auth.AppID, err)
		}
	}
	if _, err := github.New(github.Config{Scope: github.Scope{Owner: "acme"}}); err == nil {
		t.Fatal("no credentials accepted")
	}
}

func TestParseDelivery_signature_and_event(t *testing.T) {
	secret := []byte("pool-secret")
	body := []byte(`{"action":"queued","workflow_job":{"id":7,"run_id":3,"status":"queued","labels":["self-hosted","svc-linux"]},"repository":{"full_name":"acme/app"}}`)
	cases := []struct {
		name, event, sig string
		secret           []byte
		ok               bool
		err              error
	}{
		{"signed", "workflow_job", githubapi.Sign(secret, body), secret, true, nil},
		{"another secret", "workflow_job", githubapi.Sign([]byte("other"), body), secret, false, github.ErrSignature},
		{"unsigned", "workflow_job", "", secret, false, github.ErrSignature},
		{"sha1 only", "workflow_job", "sha1=0123", secret, false, github.ErrSignature},
		{"a good sha1 signature where sha256 belongs", "workflow_job", githubapi.SignSHA1(secret, body), secret, false, github.ErrSignature},
		{"sha256 in capitals", "workflow_job", strings.Replace(githubapi.Sign(secret, body), "sha256=", "SHA256=", 1), secret, false, github.ErrSignature},
		{"the pool has no secret", "workflow_job", githubapi.Sign(secret, body), nil, false, github.ErrSignature},
		{"another event", "push", githubapi.Sign(secret, body), secret, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, ok, err := github.ParseDelivery(tc.secret, tc.event, tc.sig, body)
			if ok != tc.ok || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("got %+v %v %v", ev, ok, err)
			}
			if ok && (ev.Action != "queued" || ev.Job.ID != 7 || ev.Job.RunID != 3 || ev.Job.Repo != "acme/app") {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}

func TestMatches_labels(t *testing.T) {
	cases := []struct {
		pool, job []string
		want      bool
	}{
		{[]string{"self-hosted", "Linux", "X64", "svc-linux"}, []string{"self-hosted", "svc-linux"}, true},
		{[]string{"self-hosted", "Linux", "X64", "svc-linux"}, []string{"self-hosted", "linux", "x64"}, true},
		{[]string{"svc-linux"}, []string{"self-hosted", "svc-linux"}, false},
		{[]string{"svc-linux"}, []string{"SVC-Linux"}, true},
		{[]string{"self-hosted", "svc-linux"}, []string{"self-hosted", "svc-macos"}, false},
		{[]string{"svc-linux", "gpu"}, []string{"svc-linux", "gpu"}, true},
		{[]string{"svc-linux"}, []string{"ubuntu-latest"}, false},
		{[]string{"svc-linux"}, nil, false},
	}
	for _, tc := range cases {
		if got := github.Matches(tc.pool, tc.job); got != tc.want {
			t.Errorf("Matches(%v, %v) = %v", tc.pool, tc.job, got)
		}
	}
}
