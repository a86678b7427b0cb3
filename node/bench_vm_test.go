package node_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/internal/guest"
	"github.com/svc-project/svc/internal/testcluster"
	"github.com/svc-project/svc/raftfsm"
)

// deployTimes deploys n VMs at once and returns, for each, the time from the
// API call to Running (the answer) and to SSH answering.
func deployTimes(b *testing.B, cl *api.Client, n int) (running, ssh []time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var names []string
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			vm, err := cl.DeployVM(ctx, ns, api.DeployRequest{Image: "mini-linux", CPU: intp(1), Memory: floatp(0.25)})
			if err != nil {
				b.Error(err)
				return
			}
			up := time.Since(start)
			if _, err := guest.WaitRun(ctx, sshAddr(vm), "admin", "admin", "true"); err != nil {
				b.Error(err)
				return
			}
			answered := time.Since(start)
			mu.Lock()
			defer mu.Unlock()
			running, ssh, names = append(running, up), append(ssh, answered), append(names, vm.Name)
		}()
	}
	wg.Wait()
	for _, name := range names {
		if err := cl.DeleteVM(context.Background(), ns, name); err != nil {
			b.Error(err)
		}
	}
	return running, ssh
}

func benchDeploy(b *testing.B, concurrent int) {
	image := guest.RequireLibvirt(b)
	c := testcluster.New(b, 1, testcluster.Options{Libvirt: true, Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 32 << 30}})
	cl := c.Client(c.WaitLeader())
	upload(b, cl, "mini-linux", image)
	var running, ssh []time.Duration
	b.ResetTimer()
	for range b.N {
		r, s := deployTimes(b, cl, concurrent)
		running, ssh = append(running, r...), append(ssh, s...)
		b.StopTimer()
		// Let the deleted domains go before the next round.
		c.WaitFor("domains removed", time.Minute, func() error {
			doms, err := c.Members[0].Libvirt.List(context.Background())
			if err != nil || len(doms) > 0 {
				return fmt.Errorf("%d domains left (%v)", len(doms), err)
			}
			return nil
		})
		b.StartTimer()
	}
	b.StopTimer()
	if len(running) == 0 {
		b.Fatal("no deploy succeeded")
	}
	b.ReportMetric(ms(percentile(running, 0.5)), "running-p50-ms")
	b.ReportMetric(ms(percentile(running, 0.95)), "running-p95-ms")
	b.ReportMetric(ms(percentile(ssh, 0.5)), "ssh-p50-ms")
	b.ReportMetric(ms(percentile(ssh, 0.95)), "ssh-p95-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDeploy_one deploys mini-linux on real libvirt, one VM at a time.
func BenchmarkDeploy_one(b *testing.B) { benchDeploy(b, 1) }

// BenchmarkDeploy_10_concurrent deploys 10 mini-linux VMs at once.
func BenchmarkDeploy_10_concurrent(b *testing.B) { benchDeploy(b, 10) }

// BenchmarkImageTransfer streams a 512 MiB image from one peer to another
// through the peer API (digest verified, fsync'd) and copies the same file
// with cp, reporting both rates and their ratio.
func BenchmarkImageTransfer(b *testing.B) {
	const size = 512 << 20
	src := filepath.Join(b.TempDir(), "big.raw")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		b.Fatal(err)
	}
	_ = f.Close()
	c := testcluster.New(b, 2, testcluster.Options{})
	c.WaitLeader()
	a, dst := c.Members[0], c.Members[1]
	img := upload(b, c.Client(a), "big", src)
	var peer, plain time.Duration
	b.ResetTimer()
	for range b.N {
		_, _ = dst.Peer.Images().RemoveUnused(img.Digest, func(string) bool { return false }) // fetch it afresh
		start := time.Now()
		if err := dst.Peer.Images().Fetch(context.Background(), peerHTTP(dst), img.Digest, []string{"http://" + a.Peer.APIAddr()}); err != nil {
			b.Fatal(err)
		}
		peer += time.Since(start)
		out := filepath.Join(b.TempDir(), "copy.raw")
		start = time.Now()
		if o, err := exec.Command("cp", src, out).CombinedOutput(); err != nil {
			b.Fatalf("cp: %v %s", err, o)
		}
		if o, err := exec.Command("sync", out).CombinedOutput(); err != nil {
			b.Fatalf("sync: %v %s", err, o)
		}
		plain += time.Since(start)
		_ = os.Remove(out)
	}
	b.StopTimer()
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / (1 << 20) / d.Seconds() }
	b.ReportMetric(mbps(peer), "peer-MB/s")
	b.ReportMetric(mbps(plain), "cp-MB/s")
	b.ReportMetric(mbps(peer)/mbps(plain), "peer/cp")
	b.ReportMetric(0, "ns/op")
}
