package raftstore

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/raftfsm"
)

// benchCluster starts n stores on loopback (plain TCP, production timings)
// that bootstrap one cluster, and returns them with the leader first.
func benchCluster(b *testing.B, n int) []*Store {
	b.Helper()
	stores := make([]*Store, n)
	servers := make([]Server, n)
	for i := range stores {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		s, err := OpenStore(StoreConfig{ID: fmt.Sprintf("s%d", i), DataDir: b.TempDir(), Listener: ln}, raftfsm.NewFSM(nil))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close(false) })
		stores[i] = s
		servers[i] = Server{ID: s.ID(), Address: s.Addr(), Voter: true}
	}
	for _, s := range stores {
		if err := s.BootstrapCluster(servers); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		for i, s := range stores {
			if s.IsLeader() {
				stores[0], stores[i] = stores[i], stores[0]
				return stores
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal("no leader within 30 s")
	return nil
}

// BenchmarkStore_apply_parallel proposes commands on the leader of 3 stores
// (bolt logs fsync'd, loopback TCP, production timings) from 16 and 64
// concurrent callers, with no HTTP in the way: the ceiling Raft and its log
// set for the API's write figures (BenchmarkTagWriteParallel in node).
func BenchmarkStore_apply_parallel(b *testing.B) {
	for _, clients := range []int{16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			leader := benchCluster(b, 3)[0]
			var next atomic.Int64
			var wg sync.WaitGroup
			var mu sync.Mutex
			took := make([]time.Duration, 0, b.N)
			errs := make(chan error, clients)
			start := time.Now()
			b.ResetTimer()
			for range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						cmd := raftfsm.NamespaceCreate{Name: fmt.Sprintf("ns-%d", i), Time: time.Now()}
						t0 := time.Now()
						if _, err := leader.ApplyCommand(context.Background(), raftfsm.TypeNamespaceCreate, cmd); err != nil {
							errs <- err
							return
						}
						mu.Lock()
						took = append(took, time.Since(t0))
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "writes/s")
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2])/float64(time.Millisecond), "p50-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}
