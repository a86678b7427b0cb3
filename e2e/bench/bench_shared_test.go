package bench

import (
	"context"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// BenchmarkSharedStorage_256MiB measures, on real libvirt, a guest writing
// 256 MiB (flushed) and reading it back (caches dropped) in its
// namespace's shared folder (virtio-9p) next to the same on its own disk
// (virtio-blk on the qcow2 overlay: the raw device past its file system,
// the disk grown to 1 GiB for it), alternately in the same run; each time
// is the run call's (what `svc vm run` waits for).
func BenchmarkSharedStorage_256MiB(b *testing.B) {
	image := guest.RequireLibvirt(b)
	c := testcluster.New(b, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "bshare", Subnet: 12, Capacity: raftfsm.Capacity{CPU: 8, MemoryBytes: 8 << 30}})
	cl := c.Client(c.Members[0])
	kit.Upload(b, cl, "mini-linux", image)
	bg := context.Background()
	if _, err := cl.SetSharedStorage(bg, kit.NS, 2<<30); err != nil {
		b.Fatal(err)
	}
	vm, err := cl.DeployVM(bg, kit.NS, api.DeployRequest{Image: "mini-linux", Name: "bench", CPU: kit.Intp(1), Memory: kit.Floatp(0.5), SharedStorage: kit.Boolp(true), Timeout: kit.Floatp(3)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cl.ResizeVM(bg, kit.NS, "bench", "1G"); err != nil {
		b.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(bg, 3*time.Minute)
	defer cancel()
	if _, err := guest.WaitRun(wctx, kit.SSHAddr(vm), "admin", "admin", "true"); err != nil {
		b.Fatal(err)
	}
	run := func(script string) time.Duration {
		b.Helper()
		timeout := 600
		start := time.Now()
		r, err := cl.RunVM(bg, kit.NS, "bench", api.RunRequest{Command: []string{"sh", "-c", script}, TimeoutSeconds: &timeout})
		if err != nil || r.ExitCode != 0 {
			b.Fatalf("%s: %v %+v", script, err, r)
		}
		return time.Since(start)
	}
	const drop = "sync; echo 3 >/proc/sys/vm/drop_caches; "
	// The raw disk from 512 MiB on: past mini-linux's 64 MiB file system.
	cases := []struct{ name, write, read string }{
		{"shared", "dd if=/dev/zero of=/shared/f bs=1M count=256 conv=fsync 2>/dev/null", drop + "dd if=/shared/f of=/dev/null bs=1M 2>/dev/null && rm /shared/f"},
		{"disk", "dd if=/dev/zero of=/dev/vda bs=1M seek=512 count=256 conv=fsync 2>/dev/null", drop + "dd if=/dev/vda of=/dev/null bs=1M skip=512 count=256 2>/dev/null"},
	}
	times := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for _, cs := range cases {
			times[cs.name+"-write"] = append(times[cs.name+"-write"], run(cs.write))
			times[cs.name+"-read"] = append(times[cs.name+"-read"], run(cs.read))
		}
	}
	b.StopTimer()
	mbps := func(key string) float64 { return 256 * (1 << 20) / 1e6 / percentile(times[key], 0.5).Seconds() }
	for _, k := range []string{"shared-write", "shared-read", "disk-write", "disk-read"} {
		b.ReportMetric(mbps(k), k+"-MB/s")
	}
	b.ReportMetric(mbps("shared-write")/mbps("disk-write"), "write-ratio")
	b.ReportMetric(mbps("shared-read")/mbps("disk-read"), "read-ratio")
	b.ReportMetric(0, "ns/op")
}
