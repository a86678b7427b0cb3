package raftbench_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/raftbench"
)

func TestClosed_calls(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name      string
		callers   int
		n         int
		failAt    int // 0: never
		wantCalls func(int) bool
		wantErr   error
	}{
		{"every call once", 4, 100, 0, func(c int) bool { return c == 100 }, nil},
		{"more callers than calls", 16, 3, 0, func(c int) bool { return c == 3 }, nil},
		{"stops at the first error", 4, 1000, 10, func(c int) bool { return c >= 9 && c < 1000 }, boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[int]int{}
			res, err := raftbench.Closed(tc.callers, tc.n, func(i int) error {
				mu.Lock()
				seen[i]++
				mu.Unlock()
				if i == tc.failAt {
					return boom
				}
				return nil
			})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !tc.wantCalls(res.Calls) || len(res.Latencies) != res.Calls {
				t.Fatalf("%d calls, %d latencies", res.Calls, len(res.Latencies))
			}
			for i, n := range seen {
				if n != 1 || i < 1 || i > tc.n {
					t.Fatalf("call %d made %d times", i, n)
				}
			}
			if tc.wantErr == nil && (res.PerSecond() <= 0 || res.Percentile(0.5) > res.Percentile(0.99)) {
				t.Fatalf("%.0f/s, p50 %v, p99 %v", res.PerSecond(), res.Percentile(0.5), res.Percentile(0.99))
			}
		})
	}
}

func TestClosed_cpu(t *testing.T) {
	// A fixed amount of work, not a spin until a wall-clock deadline: a
	// loaded machine that takes the processor away during a spin would
	// shorten the CPU it costs. SHA-256 of 4 MiB takes more than 1 ms of
	// CPU on any processor of today (under 4 GB/s).
	data := make([]byte, 4<<20)
	busy := func(int) error {
		sha256.Sum256(data)
		return nil
	}
	idle := func(int) error {
		time.Sleep(2 * time.Millisecond) // waits: the call costs next to no CPU
		return nil
	}
	for _, tc := range []struct {
		name     string
		call     func(int) error
		min, max time.Duration
	}{
		{"a working call costs its work", busy, time.Millisecond, time.Second},
		{"a waiting call costs little", idle, 0, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := raftbench.Closed(1, 50, tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.CPUPerCall(); got < tc.min || got > tc.max {
				t.Fatalf("%v of CPU per call (%v in all), want %v to %v", got, res.CPU, tc.min, tc.max)
			}
		})
	}
	if (raftbench.Result{}).CPUPerCall() != 0 {
		t.Fatal("no calls, yet CPU per call")
	}
}

func TestStart_tls_elects_and_applies(t *testing.T) {
	c := raftbench.Start(t, 3, true)
	if !c.Leader().IsLeader() || len(c.Server) != 3 || len(c.Client) != 3 {
		t.Fatalf("leader first: %v; %d server and %d client configs", c.Leader().IsLeader(), len(c.Server), len(c.Client))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Leader().ApplyCommand(ctx, raftfsm.TypeNamespaceCreate, raftfsm.NamespaceCreate{Name: "ns-tls", Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Stores {
		if err := s.FSM.WaitIndex(ctx, c.Leader().FSM.Index()); err != nil {
			t.Fatalf("store %s did not apply the command: %v", s.ID(), err)
		}
	}
}
