package raftbench

import (
	"strings"
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics/compat"
)

// Timings reads the timings hashicorp/raft and raft-boltdb take of their
// own steps: where a write's time goes inside Raft.
type Timings struct{ sink *metrics.InmemSink }

// RecordTimings makes an in-memory sink the process's go-metrics sink (the
// one place raft and its log store report to), from now until the test
// ends, when a sink that drops everything takes its place again. Every
// Raft store of the process reports to it.
func RecordTimings(tb testing.TB) Timings {
	tb.Helper()
	sink := metrics.NewInmemSink(time.Hour, time.Hour)
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics, cfg.EnableServiceLabel = false, false, false
	if _, err := metrics.NewGlobal(cfg, sink); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _, _ = metrics.NewGlobal(cfg, &metrics.BlackholeSink{}) })
	return Timings{sink: sink}
}

// Mean is the mean (in milliseconds for a timer) of the samples named key;
// a key ending in ";" takes every label set of it. 0 when there are none.
func (t Timings) Mean(key string) float64 {
	var sum float64
	var n int
	for _, iv := range t.sink.Data() {
		iv.RLock()
		for k, s := range iv.Samples {
			if k == key || strings.HasSuffix(key, ";") && strings.HasPrefix(k, key) {
				sum += s.Sum
				n += s.Count
			}
		}
		iv.RUnlock()
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Report adds to b's figures the means of a write's steps in Raft since
// RecordTimings: the leader storing a batch of entries in its log
// (leader-store-ms), the AppendEntries round trip to a follower, which
// stores the batch in its own log before it answers (append-rpc-ms, and
// follower-store-ms inside it), the whole time from the leader's dispatch
// of an entry to its commit (commit-ms), and how many entries one log
// write carries (entries/store).
func (t Timings) Report(b *testing.B) {
	b.ReportMetric(t.Mean("raft.commitTime"), "commit-ms")
	b.ReportMetric(t.Mean("raft.leader.dispatchLog"), "leader-store-ms")
	b.ReportMetric(t.Mean("raft.replication.appendEntries.rpc;"), "append-rpc-ms")
	b.ReportMetric(t.Mean("raft.rpc.appendEntries.storeLogs"), "follower-store-ms")
	b.ReportMetric(t.Mean("raft.boltdb.logsPerBatch"), "entries/store")
}
