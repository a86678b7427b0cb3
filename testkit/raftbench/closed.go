package raftbench

import (
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Result is what a closed loop of callers measured.
type Result struct {
	// Calls is how many calls succeeded, Took the loop's whole time.
	Calls int
	Took  time.Duration
	// Latencies are the calls' times, sorted.
	Latencies []time.Duration
	// CPU is the processor time (user and system) the whole process spent
	// during the loop: in a benchmark that runs every peer and client in
	// one process, what the machine spent on the calls.
	CPU time.Duration
}

// PerSecond is the calls per second.
func (r Result) PerSecond() float64 { return float64(r.Calls) / r.Took.Seconds() }

// CPUPerCall is the processor time spent per successful call, 0 with none.
func (r Result) CPUPerCall() time.Duration {
	if r.Calls == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Calls)
}

// processCPU is the user and system time this process has spent so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Percentile returns the latency at p (0..1), 0 with no calls.
func (r Result) Percentile(p float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[min(len(r.Latencies)-1, int(p*float64(len(r.Latencies))))]
}

// Closed runs call n times from callers concurrent goroutines, each calling
// again as soon as its call returns (i numbers the calls from 1), and stops
// at the first error, which it returns with what was measured until then.
func Closed(callers, n int, call func(i int) error) (Result, error) {
	var (
		next      atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex
		latencies = make([]time.Duration, 0, n)
		firstErr  error
		failed    atomic.Bool
	)
	start, cpu0 := time.Now(), processCPU()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				t0 := time.Now()
				err := call(int(i))
				took := time.Since(t0)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = err
					}
					failed.Store(true)
				} else {
					latencies = append(latencies, took)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	r := Result{Calls: len(latencies), Took: time.Since(start), Latencies: latencies, CPU: processCPU() - cpu0}
	slices.Sort(r.Latencies)
	return r, firstErr
}
