package github_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svc-project/svc/runners/github"
	"github.com/svc-project/svc/testkit/githubapi"
)

// GitHub refusing under a secondary limit, with and without Retry-After:
// the client holds every call (it asks nothing more) until the time
// GitHub gave, or a minute when it gave none.
func TestClient_holds_under_a_secondary_limit(t *testing.T) {
	key, _ := appKey(t)
	for _, tc := range []struct {
		name       string
		retryAfter bool
		limitFor   time.Duration
		wantHold   time.Duration
	}{
		{"with Retry-After", true, 90 * time.Second, 90 * time.Second},
		{"without Retry-After: a minute", false, 10 * time.Second, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := githubapi.Start(t, key, "")
			c, err := github.New(github.Config{APIBase: s.URL, Scope: github.Scope{Owner: "acme", Repo: "app"}, Auth: github.Auth{Token: s.Token}})
			if err != nil {
				t.Fatal(err)
			}
			s.SecondaryLimitFor(tc.limitFor, tc.retryAfter)
			before := time.Now()
			_, _, err = c.JITConfig(context.Background(), "r1", []string{"self-hosted"}, 0)
			until, ok := github.HeldUntil(err)
			if !errors.Is(err, github.ErrLimited) || !ok || until.Sub(before) < tc.wantHold-2*time.Second || until.Sub(before) > tc.wantHold+2*time.Second {
				t.Fatalf("got %v (until %s after), want a hold of %s", err, until.Sub(before), tc.wantHold)
			}
			calls := s.CallsBetween(before, time.Now().Add(time.Hour))
			for _, call := range []func() error{
				func() error {
					_, _, err := c.JITConfig(context.Background(), "r2", []string{"self-hosted"}, 0)
					return err
				},
				func() error { return c.RemoveRunner(context.Background(), 7) },
				func() error { _, err := c.QueuedJobs(context.Background()); return err },
				func() error { _, _, err := c.JobState(context.Background(), "acme/app", 9); return err },
			} {
				if err := call(); !errors.Is(err, github.ErrLimited) {
					t.Fatalf("a call while held: %v", err)
				}
			}
			if n := s.CallsBetween(before, time.Now().Add(time.Hour)); n != calls {
				t.Fatalf("%d requests made while held", n-calls)
			}
			if h, ok := c.HeldUntil(); !ok || !h.Equal(until) {
				t.Fatalf("HeldUntil %v %v", h, ok)
			}
		})
	}
}

// The primary limit spent: held until GitHub's x-ratelimit-reset; and the
// sweep stops reading once under a tenth of the limit is left, while a
// runner can still be made.
func TestClient_primary_limit_and_its_reserve(t *testing.T) {
	key, _ := appKey(t)
	s := githubapi.Start(t, key, "")
	s.SetLimits(githubapi.Limits{PerHour: 20})
	c, err := github.New(github.Config{APIBase: s.URL, Scope: github.Scope{Owner: "acme", Repo: "app"}, Auth: github.Auth{Token: s.Token}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s.Queue(ctx, "acme/app", true, []string{"self-hosted"})
	reads := 0
	for ; reads < 30; reads++ {
		if _, err := c.QueuedJobs(ctx); err != nil {
			if !errors.Is(err, github.ErrReadBudget) {
				t.Fatalf("sweep %d: %v, want the reserve kept", reads, err)
			}
			break
		}
	}
	// Each sweep reads 3 times (queued runs, runs under way, the run's
	// jobs): the sweeps stop at the reserve (2 of 20), never refused.
	if reads < 5 || s.Refusals() != 0 {
		t.Fatalf("%d sweeps before the reserve, %d refusals", reads, s.Refusals())
	}
	for i := 0; ; i++ {
		_, _, err := c.JITConfig(ctx, "r"+string(rune('a'+i)), []string{"self-hosted"}, 0)
		if err == nil {
			continue
		}
		until, ok := github.HeldUntil(err)
		if !ok || until.Before(time.Now().Add(50*time.Minute)) || s.Refusals() > 1 {
			t.Fatalf("past the primary limit: %v (until %v), %d refusals", err, until, s.Refusals())
		}
		break
	}
}

// The sweep's reads are budgeted: a burst of sweeps stops at the budget,
// saying so, without GitHub refusing anything.
func TestClient_sweep_read_budget(t *testing.T) {
	key, _ := appKey(t)
	s := githubapi.Start(t, key, "")
	c, err := github.New(github.Config{APIBase: s.URL, Scope: github.Scope{Owner: "acme", Repo: "app"}, Auth: github.Auth{Token: s.Token}})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var last error
	for range github.ReadBurst {
		if _, _, last = c.JobState(context.Background(), "acme/app", 1); errors.Is(last, github.ErrReadBudget) {
			break
		}
	}
	_, _, last = c.JobState(context.Background(), "acme/app", 1)
	if !errors.Is(last, github.ErrReadBudget) || s.Refusals() != 0 {
		t.Fatalf("after a burst of reads: %v, %d refusals", last, s.Refusals())
	}
	if n := s.CallsBetween(start, time.Now().Add(time.Hour)); n > github.ReadBurst+1 {
		t.Fatalf("%d reads made, budget burst %d", n, github.ReadBurst)
	}
}
