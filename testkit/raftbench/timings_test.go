package raftbench_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/raftbench"
)

func TestTimings_steps_of_the_writes(t *testing.T) {
	c := raftbench.Start(t, 3, false)
	timings := raftbench.RecordTimings(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const writes = 20
	for i := range writes {
		if _, err := c.Leader().ApplyCommand(ctx, raftfsm.TypeNamespaceCreate, raftfsm.NamespaceCreate{Name: fmt.Sprintf("ns-%d", i), Time: time.Now()}); err != nil {
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
