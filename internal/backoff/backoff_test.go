package backoff_test

import (
	"testing"
	"time"

	"github.com/svc-project/svc/internal/backoff"
)

func TestKeyed_doubles_to_its_most(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first, most time.Duration
		jitter      bool
		fails       int
		want        time.Duration // without jitter: exactly; with: at least half, at most this
	}{
		{name: "first", first: 30 * time.Second, most: 10 * time.Minute, fails: 1, want: 30 * time.Second},
		{name: "doubled twice", first: 30 * time.Second, most: 10 * time.Minute, fails: 3, want: 2 * time.Minute},
		{name: "at its most", first: 30 * time.Second, most: 10 * time.Minute, fails: 40, want: 10 * time.Minute},
		{name: "a most that is no double of the first", first: 3 * time.Second, most: 10 * time.Second, fails: 4, want: 10 * time.Second},
		{name: "jittered", first: time.Second, most: time.Minute, jitter: true, fails: 3, want: 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := &backoff.Keyed{First: tc.first, Most: tc.most, Jitter: tc.jitter}
			now := time.Unix(1e9, 0)
			var d time.Duration
			for range tc.fails {
				d = k.Fail("a", now)
			}
			if tc.jitter && (d < tc.want/2 || d > tc.want) || !tc.jitter && d != tc.want {
				t.Fatalf("wait after %d failures: %s, want %s (jitter %v)", tc.fails, d, tc.want, tc.jitter)
			}
			if !k.Waiting("a", now.Add(d-time.Nanosecond)) || k.Waiting("a", now.Add(d)) {
				t.Fatalf("waiting %s after its failure: %v; at its end: %v", d, k.Waiting("a", now.Add(d-time.Nanosecond)), k.Waiting("a", now.Add(d)))
			}
			if k.Waiting("b", now) {
				t.Fatal("a key that never failed waits")
			}
		})
	}
}

func TestKeyed_forget_starts_again(t *testing.T) {
	k := &backoff.Keyed{First: time.Second, Most: time.Hour}
	now := time.Unix(1e9, 0)
	k.Fail("a", now)
	k.Fail("a", now)
	k.Forget("a")
	if k.Waiting("a", now) {
		t.Fatal("a forgotten key waits")
	}
	if d := k.Fail("a", now); d != time.Second {
		t.Fatalf("the first failure after a success waits %s, want the first wait", d)
	}
	k.Reset()
	if k.Waiting("a", now) {
		t.Fatal("a key waits after Reset")
	}
}
