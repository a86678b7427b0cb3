package httpapi

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWatchHub_change_with_1000_idle_watchers: the ring full (20,000
// events of other namespaces, as a member can fill it), 1,000 watchers
// waiting at their place, then changes one at a time: the CPU the peer
// spends per change until every watcher has read it, and the time from
// the change to the last watcher's read. "positioned" is the hub as it
// is (a watcher reads what is after its place, woken only for its kind);
// "scan" is the hub as it was (every watcher scans the whole ring at every
// change of any kind), run beside it as the baseline.
func BenchmarkWatchHub_change_with_1000_idle_watchers(b *testing.B) {
	const watchers = 1000
	for _, mode := range []string{"positioned", "scan"} {
		b.Run(mode, func(b *testing.B) {
			h := newWatchHub(nil, "")
			rv := uint64(1)
			h.mu.Lock()
			for i := range maxWatchEvents {
				h.events = append(h.events, watchEvent{RV: rv, Kind: watchVMs, NS: fmt.Sprintf("filler-%d", i%50), Type: eventModified})
				rv++
			}
			h.index = rv
			h.mu.Unlock()
			keep := func(e watchEvent) bool { return e.NS == "team" }
			var read sync.WaitGroup
			stop := make(chan struct{})
			var done, placed sync.WaitGroup
			for range watchers {
				done.Add(1)
				placed.Add(1)
				go func() {
					defer done.Done()
					from, first := rv, true
					for {
						var evs []watchEvent
						var grew <-chan struct{}
						if mode == "scan" {
							evs, from, grew = h.sinceScan(watchVMs, from, keep)
						} else {
							evs, from, grew, _ = h.since(watchVMs, from, keep)
						}
						for range evs {
							read.Done()
						}
						if first {
							first = false
							placed.Done()
						}
						select {
						case <-stop:
							return
						case <-grew:
						}
					}
				}()
			}
			// Every watcher at its place before the clock starts (a change
			// before it reaches its wait wakes it as well: its channel is
			// taken with its events).
			placed.Wait()
			var delay time.Duration
			before := cpuTime()
			b.ResetTimer()
			for range b.N {
				rv++
				read.Add(watchers)
				start := time.Now()
				h.mu.Lock()
				h.addLocked(rv, []watchEvent{{RV: rv, Kind: watchVMs, NS: "team", Type: eventModified}})
				h.mu.Unlock()
				read.Wait()
				delay += time.Since(start)
			}
			b.StopTimer()
			cpu := cpuTime() - before
			close(stop)
			h.mu.Lock()
			h.addLocked(rv+1, []watchEvent{{RV: rv + 1, Kind: watchVMs, NS: "other", Type: eventModified}})
			h.mu.Unlock()
			done.Wait()
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/change")
			b.ReportMetric(float64(delay.Microseconds())/1000/float64(b.N), "delay-ms/change")
		})
	}
}

// sinceScan is since as the hub did it before: a scan of the whole ring,
// and one channel for every kind (the benchmark's baseline).
func (h *watchHub) sinceScan(kind string, rv uint64, keep func(watchEvent) bool) ([]watchEvent, uint64, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []watchEvent
	for _, e := range h.events {
		if e.RV > rv && e.Kind == kind && keep(e) {
			out = append(out, e)
		}
	}
	return out, max(rv, h.index), h.grew[kind]
}

// cpuTime is the CPU this process has spent, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
