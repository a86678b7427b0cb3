package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/libvirt"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/node/host"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/peerclaim"
	"github.com/svc-project/svc/testkit/testcluster"
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
			vm, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Image: "mini-linux", CPU: kit.Intp(1), Memory: kit.Floatp(0.25)})
			if err != nil {
				b.Error(err)
				return
			}
			up := time.Since(start)
			if _, err := guest.WaitRun(ctx, kit.SSHAddr(vm), "admin", "admin", "true"); err != nil {
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
		if err := cl.DeleteVM(context.Background(), kit.NS, name); err != nil {
			b.Error(err)
		}
	}
	return running, ssh
}

// baselineDriver is a libvirt driver of its own (domains named after no
// peer of any test) on the image directory of the benchmark's peer: the
// hypervisor alone, for the baseline of a deploy.
func baselineDriver(b *testing.B, imageDir string) *libvirt.Driver {
	b.Helper()
	peerclaim.For(b, peerclaim.Peer("deploy-baseline"))
	d, err := libvirt.New(libvirt.Config{Dir: guest.TempDir(b), ImageDir: imageDir, Prefix: hypervisor.DomainPrefix("deploy-baseline")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if doms, err := d.List(ctx); err == nil {
			for _, dom := range doms {
				_ = d.Delete(ctx, dom.Name)
			}
		}
		_ = d.Close()
	})
	return d
}

// driverTimes creates n domains of the shape a deploy makes (1 CPU,
// 256 MiB, an overlay on base, the SSH and screen forwards) at once
// straight through the driver, as svc's host does, and returns the time of
// each Create (defined and started), then deletes them.
func driverTimes(b *testing.B, d *libvirt.Driver, base string, n int) []time.Duration {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	var took []time.Duration
	var names []string
	taken := map[int]bool{}
	for i := range n {
		spec := hypervisor.Spec{
			Name: hypervisor.DomainName("deploy-baseline", kit.NS, fmt.Sprintf("vm-%d", i)), CPU: 1, MemoryMiB: 256,
			BaseImage: base, BaseFormat: "qcow2", ListenAddr: "127.0.0.1", VNCPort: freeFromTop(b, api.VNCPortMin, api.VNCPortMax, taken),
			Forwards: []hypervisor.Forward{
				{HostPort: freeFromTop(b, api.ForwardPortMin, api.ForwardPortMax, taken), GuestPort: 22},
				{HostPort: freeFromTop(b, api.ForwardPortMin, api.ForwardPortMax, taken), GuestPort: 5900},
			},
		}
		names = append(names, spec.Name)
		wg.Go(func() {
			start := time.Now()
			if err := d.Create(ctx, spec); err != nil {
				b.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			took = append(took, time.Since(start))
		})
	}
	wg.Wait()
	for _, name := range names {
		if err := d.Delete(ctx, name); err != nil {
			b.Error(err)
		}
	}
	return took
}

// freeFromTop returns the highest port of lo..hi that is free on 127.0.0.1
// and not yet taken, and takes it: svc's VM port ranges, below the
// kernel's ephemeral ports (which outgoing connections take), from the end
// the peer's own allocation comes to last.
func freeFromTop(b *testing.B, lo, hi int, taken map[int]bool) int {
	b.Helper()
	for port := hi; port >= lo; port-- {
		if taken[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		_ = l.Close()
		taken[port] = true
		return port
	}
	b.Fatalf("no free port in %d-%d", lo, hi)
	return 0
}

// benchDeploy deploys concurrent VMs at once through the API, b.N rounds;
// after each round, with the round's VMs gone, it creates as many domains
// of the same shape straight through the driver (the hypervisor's own time
// to start them on this machine: the baseline) and reports both.
func benchDeploy(b *testing.B, concurrent int) {
	image := guest.RequireLibvirt(b)
	c := testcluster.New(b, 1, testcluster.Options{Libvirt: true, Prefix: "bdeploy", Subnet: 23, Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 32 << 30}})
	m := c.WaitLeader()
	cl := c.Client(m)
	img := kit.Upload(b, cl, "mini-linux", image)
	base := baselineDriver(b, peer.ImageDir(m.DataDir))
	var running, ssh, alone []time.Duration
	b.ResetTimer()
	for range b.N {
		r, s := deployTimes(b, cl, concurrent)
		running, ssh = append(running, r...), append(ssh, s...)
		b.StopTimer()
		// Let the deleted domains go before the baseline and the next round:
		// the host removes them after the delete's answer, each within its
		// bound (a pass to notice, then host.RemoveTimeout).
		c.WaitFor("domains removed", host.RemoveTimeout+time.Minute, func() error {
			doms, err := m.Libvirt.List(context.Background())
			if err != nil || len(doms) > 0 {
				return fmt.Errorf("%d domains left: %+v (%v)", len(doms), doms, err)
			}
			return nil
		})
		alone = append(alone, driverTimes(b, base, m.Peer.Images().Path(img.Digest), concurrent)...)
		b.StartTimer()
	}
	b.StopTimer()
	if len(running) == 0 || len(alone) == 0 {
		b.Fatal("no deploy succeeded")
	}
	b.ReportMetric(ms(percentile(running, 0.5)), "running-p50-ms")
	b.ReportMetric(ms(percentile(running, 0.95)), "running-p95-ms")
	b.ReportMetric(ms(percentile(alone, 0.5)), "driver-p50-ms")
	b.ReportMetric(ms(percentile(alone, 0.95)), "driver-p95-ms")
	b.ReportMetric(float64(percentile(running, 0.95))/float64(percentile(alone, 0.95)), "running/driver-p95")
	b.ReportMetric(ms(percentile(ssh, 0.5)), "ssh-p50-ms")
	b.ReportMetric(ms(percentile(ssh, 0.95)), "ssh-p95-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkDeploy_one deploys mini-linux on real libvirt, one VM at a time.
func BenchmarkDeploy_one(b *testing.B) { benchDeploy(b, 1) }

// BenchmarkDeploy_10_concurrent deploys 10 mini-linux VMs at once.
func BenchmarkDeploy_10_concurrent(b *testing.B) { benchDeploy(b, 10) }

// randomFile writes size random bytes to a new file and returns its path.
func randomFile(b *testing.B, size int64) string {
	b.Helper()
	src := filepath.Join(b.TempDir(), "big.raw")
	f, err := os.Create(src)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return src
}

// cpSync times the baseline of a transfer: cp of src and sync of the copy.
func cpSync(b *testing.B, src string) time.Duration {
	b.Helper()
	out := filepath.Join(b.TempDir(), "copy.raw")
	start := time.Now()
	if o, err := exec.Command("cp", src, out).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v %s", err, o)
	}
	if o, err := exec.Command("sync", out).CombinedOutput(); err != nil {
		b.Fatalf("sync: %v %s", err, o)
	}
	took := time.Since(start)
	_ = os.Remove(out)
	return took
}

// reportMBps reports the MB/s of each named total time over b.N transfers of
// size bytes, and each one's ratio to the last (the baseline).
func reportMBps(b *testing.B, size int64, names []string, times ...time.Duration) {
	mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / (1 << 20) / d.Seconds() }
	base := names[len(names)-1]
	for i, name := range names {
		b.ReportMetric(mbps(times[i]), name+"-MB/s")
		if i < len(names)-1 {
			b.ReportMetric(mbps(times[i])/mbps(times[len(times)-1]), name+"/"+base)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// BenchmarkImageTransfer streams a 512 MiB image from one peer to another
// (what a deploy on a peer without the image waits for) next to cp and sync
// of the same file.
func BenchmarkImageTransfer(b *testing.B) {
	const size = 512 << 20
	src := randomFile(b, size)
	c := testcluster.New(b, 2, testcluster.Options{})
	c.WaitLeader()
	a, dst := c.Members[0], c.Members[1]
	img := kit.Upload(b, c.Client(a), "big", src)
	var peer, plain time.Duration
	b.ResetTimer()
	for range b.N {
		_, _ = dst.Peer.Images().RemoveUnused(img.Digest, func(string) bool { return false }) // fetch it afresh
		start := time.Now()
		// With the check a peer runs on a blob it receives, as a deploy does.
		check := func(ctx context.Context, path string) error {
			_, err := diskcheck.Disk(ctx, path, "")
			return err
		}
		if err := dst.Peer.Images().Fetch(context.Background(), peerHTTP(dst), img.Digest, []string{"https://" + a.Peer.Links().PeerAddr(a.Name)}, check); err != nil {
			b.Fatal(err)
		}
		peer += time.Since(start)
		plain += cpSync(b, src)
	}
	b.StopTimer()
	reportMBps(b, size, []string{"peer", "cp"}, peer, plain)
}

// BenchmarkImageDownload downloads a 512 MiB image through the API into a
// file (written and flushed, as svc image download does), from the peer
// that holds it and through a peer that does not, next to cp and sync.
func BenchmarkImageDownload(b *testing.B) {
	const size = 512 << 20
	src := randomFile(b, size)
	c := testcluster.New(b, 2, testcluster.Options{})
	c.WaitLeader()
	holder, other := c.Members[0], c.Members[1]
	img := kit.Upload(b, c.Client(holder), "big", src)
	if other.Peer.Images().Has(img.Digest) {
		b.Fatal("the second peer holds the blob: the download through it would not be proxied")
	}
	download := func(m *testcluster.Member) time.Duration {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		out := filepath.Join(b.TempDir(), "download.raw")
		start := time.Now()
		body, _, etag, err := c.Client(m).DownloadImage(ctx, kit.NS, "big", 0)
		if err != nil {
			b.Fatal(err)
		}
		defer body.Close()
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(f, body)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		took := time.Since(start)
		if err != nil || n != size || etag != img.Digest {
			b.Fatalf("download through %s: %d bytes, ETag %s: %v", m.Name, n, etag, err)
		}
		_ = os.Remove(out)
		return took
	}
	var direct, proxied, plain time.Duration
	b.ResetTimer()
	for range b.N {
		direct += download(holder)
		proxied += download(other)
		if other.Peer.Images().Has(img.Digest) {
			b.Fatal("the download through the second peer left the blob there")
		}
		plain += cpSync(b, src)
	}
	b.StopTimer()
	reportMBps(b, size, []string{"holder", "via-peer", "cp"}, direct, proxied, plain)
}

// BenchmarkDeploy_after_delete times, in each round on one peer, a deploy on
// a quiet node and then, right after that VM's delete, a second deploy: the
// second must not wait for the first VM's domain to go (real libvirt).
func BenchmarkDeploy_after_delete(b *testing.B) {
	image := guest.RequireLibvirt(b)
	c := testcluster.New(b, 1, testcluster.Options{Libvirt: true, Capacity: raftfsm.Capacity{CPU: 64, MemoryBytes: 32 << 30}, Prefix: "bdel", Subnet: 24})
	cl := c.Client(c.WaitLeader())
	kit.Upload(b, cl, "mini-linux", image)
	deploy := func() (string, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		start := time.Now()
		vm, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Image: "mini-linux", CPU: kit.Intp(1), Memory: kit.Floatp(0.25)})
		if err != nil {
			b.Fatal(err)
		}
		return vm.Name, time.Since(start)
	}
	quietNode := func() {
		c.WaitFor("domains removed", time.Minute, func() error {
			doms, err := c.Members[0].Libvirt.List(context.Background())
			if err != nil || len(doms) > 0 {
				return fmt.Errorf("%d domains left (%v)", len(doms), err)
			}
			return nil
		})
	}
	var first, after []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		quietNode()
		b.StartTimer()
		name, d := deploy()
		first = append(first, d)
		if err := cl.DeleteVM(context.Background(), kit.NS, name); err != nil {
			b.Fatal(err)
		}
		name, d = deploy()
		after = append(after, d)
		if err := cl.DeleteVM(context.Background(), kit.NS, name); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(first, 0.5)), "first-p50-ms")
	b.ReportMetric(ms(percentile(after, 0.5)), "after-delete-p50-ms")
	b.ReportMetric(ms(percentile(after, 0.95)), "after-delete-p95-ms")
	b.ReportMetric(float64(percentile(after, 0.5))/float64(percentile(first, 0.5)), "after-x-first")
	b.ReportMetric(0, "ns/op")
}
