package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Bounds of the watch benchmark.
const (
	benchWatchers    = 1000
	benchWritesPerS  = 100
	benchWriteFor    = 5 * time.Second
	benchLiveTags    = 4 // a write adds a tag and another removes an old one
	benchClientAddrs = 4 // 127.0.0.1-4: 250 connections each, under the per-address limit
)

// BenchmarkWatch_1000_streams opens 1,000 watches of the nodes of a
// namespace on a follower of a 3-peer cluster, sends 100 writes/s for 5 s
// through the leader (a node tag added, an old one removed, alternately),
// and reports, for every watcher and every added tag, the delay from the
// write's call to the first event that carries it or a later tag (a watch
// may merge quick changes of one record into its latest state) (p50, p99),
// against the same writes watched by one stream, in the same run, and the
// process's heap with the watches open against before them (the watchers'
// side is in the same process: an upper bound of the peer's share).
func BenchmarkWatch_1000_streams(b *testing.B) {
	for range b.N {
		one := benchWatch(b, 1)
		many := benchWatch(b, benchWatchers)
		b.ReportMetric(ms(one.p50), "delay-p50-1watch-ms")
		b.ReportMetric(ms(one.p99), "delay-p99-1watch-ms")
		b.ReportMetric(ms(many.p50), "delay-p50-ms")
		b.ReportMetric(ms(many.p99), "delay-p99-ms")
		b.ReportMetric(many.heapMiB, "heap-with-watches-MiB")
		b.ReportMetric(many.forWatchesMiB, "heap-for-watches-MiB")
		b.Logf("%d watchers: delivery p50 %.1f ms, p99 %.1f ms (1 watcher: %.1f, %.1f ms); heap %.0f MiB with them open, +%.0f MiB for the watches (both sides)",
			benchWatchers, ms(many.p50), ms(many.p99), ms(one.p50), ms(one.p99), many.heapMiB, many.forWatchesMiB)
	}
}

// watchFigures are one run's figures.
type watchFigures struct {
	p50, p99               time.Duration
	heapMiB, forWatchesMiB float64
}

func benchWatch(b *testing.B, watchers int) watchFigures {
	// Raft's production timeouts: the 1,000 streams load the machine's two
	// cores, which the tests' short timeouts would take for a dead leader.
	c := testcluster.New(b, 3, testcluster.Options{Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 64 << 30}, ProductionTiming: true})
	leader := c.WaitLeader()
	follower := c.Followers()[0]
	node := c.Members[0].Name
	token := c.Token("admin", true)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	sent := make([]time.Time, benchWritesPerS*int(benchWriteFor/time.Second))
	var sentMu sync.Mutex
	delays := make([][]time.Duration, watchers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var opened, done sync.WaitGroup
	for w := range watchers {
		opened.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+w%benchClientAddrs))}}
			hc := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext, DisableCompression: true}}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+follower.Peer.APIAddr()+"/api/v1/namespaces/"+kit.NS+"/nodes?watch=true", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := hc.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				opened.Done()
				b.Errorf("watcher %d: %v %v", w, err, resp)
				return
			}
			defer resp.Body.Close()
			r := bufio.NewReaderSize(resp.Body, 8<<10)
			seen := map[int]bool{}
			listed := false
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					if !listed {
						opened.Done()
					}
					return
				}
				now := time.Now()
				var ev struct {
					Type   string
					Object struct {
						Name    string
						SvcTags []string
					}
				}
				if json.Unmarshal(line, &ev) != nil {
					continue
				}
				if ev.Type == "BOOKMARK" && !listed {
					listed = true
					opened.Done()
					continue
				}
				if ev.Object.Name != node {
					continue
				}
				// The newest tag the event carries: the writes up to it are
				// delivered (a watch may merge a record's quick changes into
				// its latest state).
				newest := -1
				for _, tag := range ev.Object.SvcTags {
					var i int
					if _, err := fmt.Sscanf(tag, "w%d", &i); err == nil && i < len(sent) && i > newest {
						newest = i
					}
				}
				sentMu.Lock()
				for i := newest; i >= 0 && !seen[i]; i-- {
					seen[i] = true
					if !sent[i].IsZero() {
						delays[w] = append(delays[w], now.Sub(sent[i]))
					}
				}
				sentMu.Unlock()
			}
		}()
	}
	opened.Wait()
	runtime.GC()
	var open runtime.MemStats
	runtime.ReadMemStats(&open)

	// 100 writes/s: tag i added, tag i-benchLiveTags removed.
	cl := benchClient(c, leader)
	tick := time.NewTicker(time.Second / benchWritesPerS)
	var writes sync.WaitGroup
	adds := len(sent)
	for i := 0; i < adds; i++ {
		for _, add := range []bool{true, false} {
			<-tick.C
			if !add && i < benchLiveTags {
				continue
			}
			writes.Add(1)
			go func() {
				defer writes.Done()
				wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
				defer wcancel()
				if add {
					sentMu.Lock()
					sent[i] = time.Now()
					sentMu.Unlock()
				}
				// A 503 (a leader change) is retried, as the API asks.
				var err error
				for range 3 {
					if add {
						_, err = cl.TagNode(wctx, kit.NS, node, fmt.Sprintf("w%d", i))
					} else {
						_, err = cl.UntagNode(wctx, kit.NS, node, fmt.Sprintf("w%d", i-benchLiveTags))
					}
					if api.CodeOf(err) != http.StatusServiceUnavailable {
						break
					}
				}
				if err != nil {
					b.Errorf("write %d (add %v): %v", i, add, err)
				}
			}()
		}
	}
	tick.Stop()
	writes.Wait()
	// Every watcher has every added tag's event, or the stream fell behind.
	c.WaitFor("every event delivered", 30*time.Second, func() error {
		for w := range delays {
			if n := countDelays(&sentMu, delays[w]); n < adds {
				return fmt.Errorf("watcher %d has %d of %d", w, n, adds)
			}
		}
		return nil
	})
	cancel()
	done.Wait()
	var all []time.Duration
	for _, d := range delays {
		all = append(all, d...)
	}
	return watchFigures{
		p50: percentile(all, 0.50), p99: percentile(all, 0.99),
		heapMiB:       float64(open.HeapInuse) / (1 << 20),
		forWatchesMiB: float64(int64(open.HeapInuse)-int64(before.HeapInuse)) / (1 << 20),
	}
}

func countDelays(mu *sync.Mutex, d []time.Duration) int {
	mu.Lock()
	defer mu.Unlock()
	return len(d)
}
