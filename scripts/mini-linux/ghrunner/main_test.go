package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/runners/github"
	"github.com/svc-project/svc/testkit/githubapi"
)

// The runner stand-in against the GitHub stand-in: started with a JIT
// configuration, it takes the queued job and completes it.
func TestRun_takes_and_completes_a_job(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := githubapi.Start(t, key, "")
	ctx := context.Background()
	jobs := s.Queue(ctx, "acme/app", true, []string{"svc-linux"})
	c, err := github.New(github.Config{APIBase: s.URL, Scope: github.Scope{Owner: "acme", Repo: "app"}, Auth: github.Auth{Token: s.Token}})
	if err != nil {
		t.Fatal(err)
	}
	_, jit, err := c.JITConfig(ctx, "r1", []string{"svc-linux"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, &out, jit, 10*time.Millisecond, 5*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if j := s.Jobs()[jobs[0].ID]; j.Status != "completed" || j.Conclusion != "success" || !strings.Contains(out.String(), "completed") {
		t.Fatalf("job %+v; runner said %q", j, out.String())
	}
	// A JIT configuration is good for one job.
	if err := run(ctx, &out, jit, 0, time.Second); err == nil {
		t.Fatal("a used configuration took another job")
	}
	if err := run(ctx, &out, "not-base64!", 0, time.Second); err == nil {
		t.Fatal("a bad configuration was taken")
	}
}
