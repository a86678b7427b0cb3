package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// procKiB reads a field of /proc/self/status in KiB (VmRSS, VmHWM).
func procKiB(b *testing.B, field string) int64 {
	b.Helper()
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(st), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// BenchmarkJobFlood queues 1,000 pushes of a 1 MiB image to an address that
// refuses connections on one peer (16 namespaces, each at its limit of open
// jobs) and reports the peak resident memory while they drain next to the
// idle peer's, in one process (a plain user took a peer from 42 MB to
// 3.34 GB this way before jobs were bounded and buffers sized by the disk).
func BenchmarkJobFlood(b *testing.B) {
	const flood = 1000
	c := testcluster.New(b, 1, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	ctx := context.Background()
	disk := make([]byte, 1<<20)
	copy(disk, "a small disk")
	namespaces := (flood + raftfsm.MaxOpenJobs - 1) / raftfsm.MaxOpenJobs
	for i := range namespaces {
		name := fmt.Sprintf("flood-%d", i)
		if _, err := cl.CreateNamespace(ctx, name); err != nil {
			b.Fatal(err)
		}
		if _, err := cl.UploadImage(ctx, name, "small", bytes.NewReader(disk), int64(len(disk))); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	idle := procKiB(b, "VmRSS")
	var peak int64
	var took time.Duration
	b.ResetTimer()
	for range b.N {
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil { // reset VmHWM
			b.Fatal(err)
		}
		start := time.Now()
		for i := range flood {
			ns := fmt.Sprintf("flood-%d", i/raftfsm.MaxOpenJobs)
			if _, err := cl.PushImage(ctx, ns, "small", fmt.Sprintf("127.0.0.1:1/flood/small:%d", i)); err != nil {
				b.Fatalf("push %d: %v", i, err)
			}
		}
		c.WaitFor("every job ended", 10*time.Minute, func() error {
			for i := range namespaces {
				jobs, err := cl.ListJobs(ctx, fmt.Sprintf("flood-%d", i))
				if err != nil {
					return err
				}
				for _, j := range jobs {
					if j.State != "Failed" && j.State != "Succeeded" {
						return fmt.Errorf("job %s is %s", j.Name, j.State)
					}
				}
			}
			return nil
		})
		took += time.Since(start)
		peak = max(peak, procKiB(b, "VmHWM"))
	}
	b.StopTimer()
	b.ReportMetric(float64(idle)/1024, "idle-MB")
	b.ReportMetric(float64(peak)/1024, "flood-peak-MB")
	b.ReportMetric(took.Seconds()/float64(b.N), "s/flood")
	b.ReportMetric(0, "ns/op")
}
