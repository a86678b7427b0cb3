package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/raftbench"
	"github.com/svc-project/svc/testkit/testcluster"
)

func percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(int(float64(len(s))*p), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// benchClient is an admin client of m with a connection pool for many
// concurrent requests.
func benchClient(c *testcluster.Cluster, m *testcluster.Member) *api.Client {
	cl := c.Client(m)
	cl.HTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	return cl
}

// fabrics are the two ways peers talk in the benchmarks that state what
// the fabric costs: TLS with certificates (what svc runs) and the plain
// baseline (peer.Config.PlainPeers), in the same run.
var fabrics = []struct {
	name  string
	plain bool
}{{"fabric=tls", false}, {"fabric=plain", true}}

// BenchmarkTagWrite sends tag writes one at a time, alternately to the leader
// and to a follower (which forwards them), over the real HTTP API of a
// 3-peer cluster with production Raft timings, and reports the latency of
// each path and their ratio; once over the fabric's TLS and once without.
func BenchmarkTagWrite(b *testing.B) {
	for _, f := range fabrics {
		b.Run(f.name, func(b *testing.B) { benchTagWrite(b, f.plain) })
	}
}

func benchTagWrite(b *testing.B, plain bool) {
	c := testcluster.New(b, 3, testcluster.Options{ProductionTiming: true, PlainPeers: plain})
	leader := c.WaitLeader()
	follower := c.Followers()[0]
	lc, fc := benchClient(c, leader), benchClient(c, follower)
	ctx := context.Background()
	var viaLeader, viaFollower []time.Duration
	b.ResetTimer()
	for i := range b.N {
		for _, path := range []struct {
			cl  *api.Client
			out *[]time.Duration
		}{{lc, &viaLeader}, {fc, &viaFollower}} {
			start := time.Now()
			if _, err := path.cl.TagNode(ctx, api.DefaultNamespace, leader.Name, fmt.Sprintf("t%d", i%50)); err != nil {
				b.Fatal(err)
			}
			*path.out = append(*path.out, time.Since(start))
		}
	}
	b.StopTimer()
	sum := func(d []time.Duration) (t time.Duration) {
		for _, x := range d {
			t += x
		}
		return t
	}
	b.ReportMetric(float64(len(viaLeader))/sum(viaLeader).Seconds(), "leader-writes/s")
	b.ReportMetric(float64(len(viaFollower))/sum(viaFollower).Seconds(), "follower-writes/s")
	b.ReportMetric(ms(percentile(viaLeader, 0.50)), "leader-p50-ms")
	b.ReportMetric(ms(percentile(viaLeader, 0.99)), "leader-p99-ms")
	b.ReportMetric(ms(percentile(viaFollower, 0.50)), "follower-p50-ms")
	b.ReportMetric(ms(percentile(viaFollower, 0.99)), "follower-p99-ms")
	b.ReportMetric(float64(percentile(viaFollower, 0.50))/float64(percentile(viaLeader, 0.50)), "forward-ratio-p50")
	b.ReportMetric(float64(percentile(viaFollower, 0.99))/float64(percentile(viaLeader, 0.99)), "forward-ratio-p99")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkTagWriteParallel sends tag writes from 16 concurrent clients to a
// follower; Raft batches them, so throughput exceeds the serial figure.
// Once over the fabric's TLS and once without. Then, with svc's cluster
// stopped, the same number of writes from 16 clients to the floor of the
// same parts alone (writeFloor): through a follower's proxy (floor-writes/s,
// and svc/floor), straight to the leader (leader-floor-writes/s), and
// through the proxy to a leader that answers without proposing
// (http-floor-writes/s: the HTTP legs alone). Raft's own timings of its
// steps during svc's run (raftbench.Timings) say how much of a write's time
// (p50-ms) Raft took (commit-ms) and where; the processor time per write
// (cpu-us/write, and each floor's) says how much of the machine it took.
func BenchmarkTagWriteParallel(b *testing.B) {
	for _, f := range fabrics {
		b.Run(f.name, func(b *testing.B) { benchTagWriteParallel(b, f.plain) })
	}
}

func benchTagWriteParallel(b *testing.B, plain bool) {
	const clients = 16
	c := testcluster.New(b, 3, testcluster.Options{PlainPeers: plain})
	leader := c.WaitLeader()
	fc := benchClient(c, c.Followers()[0])
	timings := raftbench.RecordTimings(b)
	b.ResetTimer()
	res, err := raftbench.Closed(clients, b.N, func(i int) error {
		_, err := fc.TagNode(context.Background(), api.DefaultNamespace, leader.Name, fmt.Sprintf("p%d", i%50))
		return err
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	timings.Report(b) // before the floors' stores report too
	c.Close()
	floor := writeFloor(b, plain, throughFollower, clients, b.N)
	direct := writeFloor(b, plain, straightToLeader, clients, b.N)
	legs := writeFloor(b, plain, httpLegsOnly, clients, b.N)
	b.ReportMetric(res.PerSecond(), "writes/s")
	b.ReportMetric(ms(res.Percentile(0.5)), "p50-ms")
	b.ReportMetric(us(res.CPUPerCall()), "cpu-us/write")
	b.ReportMetric(floor.PerSecond(), "floor-writes/s")
	b.ReportMetric(us(floor.CPUPerCall()), "floor-cpu-us/write")
	b.ReportMetric(res.PerSecond()/floor.PerSecond(), "svc/floor")
	b.ReportMetric(direct.PerSecond(), "leader-floor-writes/s")
	b.ReportMetric(us(direct.CPUPerCall()), "leader-floor-cpu-us/write")
	b.ReportMetric(legs.PerSecond(), "http-floor-writes/s")
	b.ReportMetric(us(legs.CPUPerCall()), "http-floor-cpu-us/write")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkNodeList reads the node list from a follower's local replica
// with concurrent clients.
func BenchmarkNodeList(b *testing.B) {
	for _, consistent := range []bool{false, true} {
		b.Run(fmt.Sprintf("consistent=%v", consistent), func(b *testing.B) {
			c := testcluster.New(b, 3, testcluster.Options{})
			c.WaitLeader()
			fc := benchClient(c, c.Followers()[0])
			var n atomic.Int64
			b.SetParallelism(8)
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					nodes, err := fc.ListNodes(context.Background(), api.DefaultNamespace, consistent)
					if err != nil || len(nodes) != 3 {
						b.Errorf("list: %v (%d nodes)", err, len(nodes))
						return
					}
					n.Add(1)
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "reads/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkFailover stops the leader of a 3-peer cluster running raft's and
// memberlist's production timeouts, then sends a write to a survivor every
// 10 ms until one is accepted; it reports the time from the stop to that
// write. A crash leaves the others to elect a leader; a graceful stop hands
// leadership over first.
func BenchmarkFailover(b *testing.B) {
	for _, f := range fabrics {
		for _, how := range []string{"crash", "graceful"} {
			b.Run(f.name+"/"+how, func(b *testing.B) { benchFailover(b, how, f.plain) })
		}
	}
}

func benchFailover(b *testing.B, how string, plain bool) {
	var took []time.Duration
	for range b.N {
		b.StopTimer()
		c := testcluster.New(b, 3, testcluster.Options{ProductionTiming: true, PlainPeers: plain})
		old := c.WaitLeader()
		survivor := benchClient(c, c.Followers()[0])
		b.StartTimer()
		start := time.Now()
		if how == "crash" {
			c.Crash(old)
		} else {
			c.Stop(old)
		}
		deadline := start.Add(60 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := survivor.TagNode(ctx, api.DefaultNamespace, c.Followers()[0].Name, "failover")
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("no write accepted 60 s after the leader stopped: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		c.Close()
	}
	b.ReportMetric(ms(percentile(took, 0.5)), "failover-p50-ms")
	b.ReportMetric(ms(slices.Max(took)), "failover-max-ms")
	b.ReportMetric(0, "ns/op")
}

// peerHTTP is a client that calls other peers' internal routes as peer m
// does: over the fabric, with m's certificate.
func peerHTTP(m *testcluster.Member) *http.Client {
	return &http.Client{Transport: m.Peer.Links().PeerTransport()}
}
