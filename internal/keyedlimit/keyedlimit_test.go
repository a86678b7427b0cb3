package keyedlimit

import (
	"testing"
	"time"
)

func TestLimiter_Allow_cases(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	for _, tc := range []struct {
		name  string
		run   func(l *Limiter) bool
		want  bool
		keys  int
		burst int
	}{
		{"a burst passes", func(l *Limiter) bool {
			for range 3 {
				if !l.Allow("a", t0) {
					return false
				}
			}
			return true
		}, true, 10, 3},
		{"past the burst is refused", func(l *Limiter) bool {
			for range 3 {
				l.Allow("a", t0)
			}
			return l.Allow("a", t0)
		}, false, 10, 3},
		{"refilled at the rate", func(l *Limiter) bool {
			for range 3 {
				l.Allow("a", t0)
			}
			return l.Allow("a", t0.Add(time.Second))
		}, true, 10, 3},
		{"another key has its own bucket", func(l *Limiter) bool {
			for range 3 {
				l.Allow("a", t0)
			}
			return l.Allow("b", t0)
		}, true, 10, 3},
		{"a new key past the bound is refused", func(l *Limiter) bool {
			l.Allow("a", t0)
			l.Allow("b", t0)
			return l.Allow("c", t0)
		}, false, 2, 3},
		{"an idle key is forgotten, making room", func(l *Limiter) bool {
			l.Allow("a", t0)
			l.Allow("b", t0)
			return l.Allow("c", t0.Add(2*time.Minute))
		}, true, 2, 3},
		{"spent failures block", func(l *Limiter) bool {
			for range 3 {
				l.Spend("a", t0)
			}
			return !l.Blocked("a", t0) && !l.Blocked("never", t0)
		}, false, 10, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(1, tc.burst, tc.keys, time.Minute)
			if got := tc.run(l); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
