package raftbench_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/testkit/poll"
	"github.com/svc-project/svc/testkit/raftbench"
)

func TestTimings_steps_of_the_writes(t *testing.T) {
	c := raftbench.Start(t, 3, false)
	timings := raftbench.RecordTimings(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The writes go to whichever store leads: with svc's 200 ms lease, a
	// leader starved of CPU (this test beside others under -race on two
	// cores) can lose its leadership mid-write, as a production leader
	// may, and what is timed here is the writes' steps, not a failover.
	const writes = 20
	for done, i := 0, 0; done < writes; i++ {
		s := leader(t, c)
		_, err := s.ApplyCommand(ctx, raftfsm.TypeNamespaceCreate, raftfsm.NamespaceCreate{Name: fmt.Sprintf("ns-%d", i), Time: time.Now()})
		switch {
		case err == nil:
			done++
		case !errors.Is(err, raftfsm.ErrNotLeader):
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		key      string
		min, max float64
	}{
		{"raft.commitTime", 0.001, 10_000},
		{"raft.leader.dispatchLog", 0.001, 10_000},
		{"raft.replication.appendEntries.rpc;", 0.001, 10_000}, // every follower's label
		{"raft.rpc.appendEntries.storeLogs", 0.001, 10_000},
		{"raft.boltdb.logsPerBatch", 1, writes},
		{"raft.replication.appendEntries.rpc", 0, 0}, // only the labelled keys exist
		{"no.such.timer", 0, 0},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if got := timings.Mean(tc.key); got < tc.min || got > tc.max {
				t.Fatalf("Mean(%q) = %v, want %v..%v", tc.key, got, tc.min, tc.max)
			}
		})
	}
}

// leader is the store that leads now, waited for.
func leader(t *testing.T, c *raftbench.Cluster) *raftstore.Store {
	t.Helper()
	var l *raftstore.Store
	poll.For(t, "a store that leads", 10*time.Second, func() error {
		for _, s := range c.Stores {
			if s.IsLeader() {
				l = s
				return nil
			}
		}
		return errors.New("none leads")
	})
	return l
}
