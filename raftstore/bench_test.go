package raftstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/raftbench"
)

// BenchmarkStore_apply_parallel proposes commands on the leader of 3 stores
// (bolt logs fsync'd, loopback TCP, production timings) from 16 and 64
// concurrent callers, with no HTTP in the way: the ceiling Raft and its log
// set for the API's write figures (BenchmarkTagWriteParallel in node).
// Beside the throughput it reports where a write's time goes, from Raft's
// own timings of its steps (raftbench.Timings).
func BenchmarkStore_apply_parallel(b *testing.B) {
	for _, clients := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			leader := raftbench.Start(b, 3, false).Leader()
			timings := raftbench.RecordTimings(b)
			b.ResetTimer()
			res, err := raftbench.Closed(clients, b.N, func(i int) error {
				cmd := raftfsm.NamespaceCreate{Name: fmt.Sprintf("ns-%d", i), Time: time.Now()}
				_, err := leader.ApplyCommand(context.Background(), raftfsm.TypeNamespaceCreate, cmd)
				return err
			})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(res.PerSecond(), "writes/s")
			b.ReportMetric(float64(res.Percentile(0.5))/float64(time.Millisecond), "p50-ms")
			b.ReportMetric(float64(res.CPUPerCall())/float64(time.Microsecond), "cpu-us/write")
			timings.Report(b)
			b.ReportMetric(0, "ns/op")
		})
	}
}
