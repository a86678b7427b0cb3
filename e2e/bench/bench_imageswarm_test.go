package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/node/swarm"
	"github.com/svc-project/svc/testkit/chaos"
	"github.com/svc-project/svc/testkit/registrytest"
)

// swarmLinkRate is every peer's link, each way (tc tbf), in the image
// swarm benchmark.
const swarmLinkRate = "200mbit"

// BenchmarkImageSwarm copies an image (SVC_SWARM_MIB, default 512 MiB of
// random bytes) from one peer to seven at once, eight svc agents in
// network namespaces whose links are limited to the same rate each way,
// next to one peer's copy of another such image on the same links; then
// seven peers deploy a VM from one registry reference at once. It reports
// the fleet's time over the one copy's (fleet-x-one-copy), the copies the
// first holder sent (origin-copies), and the copies read from the
// registry (registry-copies). Needs root.
func BenchmarkImageSwarm(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: network namespaces and tc")
	}
	mib := int64(512)
	if v, err := strconv.ParseInt(os.Getenv("SVC_SWARM_MIB"), 10, 64); err == nil && v > 0 {
		mib = v
	}
	size := mib << 20
	bin := filepath.Join(b.TempDir(), "svc")
	// -trimpath, as make build: its build cache serves this build.
	if out, err := exec.Command("go", "build", "-trimpath", "-o", bin, "../../cmd/svc").CombinedOutput(); err != nil {
		b.Fatalf("build svc: %v: %s", err, out)
	}
	const n = 8
	c := &chaos.Cluster{Script: "../../scripts/local-cluster.sh", Bin: bin, Dir: b.TempDir(), N: n, AgentArgs: "--registry-allow " + chaos.Subnet}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := c.Up(ctx); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if b.Failed() {
			_ = c.SaveLogs(filepath.Join(os.TempDir(), "svc-bench-imageswarm"))
		}
		if err := c.Down(); err != nil {
			b.Error(err)
		}
	}()
	reg := registrytest.Start(b, registrytest.Options{Plain: true, Listen: chaos.HostAddr + ":0"})
	cl := c.Client(1, 30*time.Minute)
	for b.Loop() {
		one, fleet := swarmUpload(b, cl, "one", size), swarmUpload(b, cl, "fleet", size)
		ref := reg.Host + "/bench/swarm:v1"
		swarmPush(b, reg, ref, size)
		if _, err := cl.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
			b.Fatal(err)
		}
		for i := 1; i <= n; i++ {
			limitLink(b, i)
		}
		var others []string
		for i := 2; i <= n; i++ {
			others = append(others, c.Name(i))
		}
		oneCopy := timeCache(b, cl, one, []string{c.Name(2)})
		sent := txBytes(b, 1)
		fleetTime := timeCache(b, cl, fleet, others)
		originCopies := float64(txBytes(b, 1)-sent) / float64(size)
		read := reg.Sent()
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, len(others))
		for i, node := range others {
			wg.Go(func() {
				_, errs[i] = cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "swarm-" + node, Image: ref, Node: node, CPU: kit.Intp(1), Memory: kit.Floatp(0.5)})
			})
		}
		wg.Wait()
		regTime := time.Since(start)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		registryCopies := float64(reg.Sent()-read) / float64(size)
		b.ReportMetric(oneCopy.Seconds(), "one-copy-s")
		b.ReportMetric(fleetTime.Seconds(), "fleet-s")
		b.ReportMetric(fleetTime.Seconds()/oneCopy.Seconds(), "fleet-x-one-copy")
		b.ReportMetric(originCopies, "origin-copies")
		b.ReportMetric(regTime.Seconds(), "registry-fleet-s")
		b.ReportMetric(registryCopies, "registry-copies")
		b.Logf("%d MiB at %s a link: one copy %.1f s, 7 peers %.1f s (x%.2f), origin sent %.2f copies; registry to 7 peers %.1f s, %.2f copies read",
			mib, swarmLinkRate, oneCopy.Seconds(), fleetTime.Seconds(), fleetTime.Seconds()/oneCopy.Seconds(), originCopies, regTime.Seconds(), registryCopies)
	}
}

// swarmUpload uploads size random bytes as an image (to peer 1).
func swarmUpload(b *testing.B, cl *api.Client, name string, size int64) string {
	b.Helper()
	img := kit.Upload(b, cl, name, kit.RandomImage(b, size))
	return img.Name
}

// swarmPush pushes size random bytes as an svc disk, in the chunks a
// swarm would cut.
func swarmPush(b *testing.B, reg *registrytest.Server, ref string, size int64) {
	b.Helper()
	path := kit.RandomImage(b, size)
	r, err := ocidisk.ParseReference(ref, true, false)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := ocidisk.Push(context.Background(), r, ocidisk.Registry{Username: reg.Username, Password: reg.Password, Insecure: true}, path,
		ocidisk.Config{Kind: ocidisk.KindImage, Arch: "amd64", ChunkSize: swarm.ChunkSizeFor(size)}, nil); err != nil {
		b.Fatal(err)
	}
}

// limitLink limits peer i's link to swarmLinkRate each way: its egress in
// its namespace, its ingress on the bridge's side of its veth.
func limitLink(b *testing.B, i int) {
	b.Helper()
	tbf := []string{"qdisc", "replace", "dev", "", "root", "tbf", "rate", swarmLinkRate, "burst", "256kb", "latency", "100ms"}
	for _, args := range [][]string{
		append([]string{"-n", fmt.Sprintf("svc-peer-%d", i)}, replaceDev(tbf, "eth0")...),
		replaceDev(tbf, fmt.Sprintf("svcv%d", i)),
	} {
		if out, err := exec.Command("tc", args...).CombinedOutput(); err != nil {
			b.Fatalf("tc %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
}

func replaceDev(args []string, dev string) []string {
	out := append([]string(nil), args...)
	out[3] = dev
	return out
}

// txBytes is what peer i has sent on its link.
func txBytes(b *testing.B, i int) int64 {
	b.Helper()
	out, err := exec.Command("ip", "netns", "exec", fmt.Sprintf("svc-peer-%d", i), "cat", "/sys/class/net/eth0/statistics/tx_bytes").Output()
	if err != nil {
		b.Fatal(err)
	}
	v, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

// timeCache copies an image to nodes with a cache job and times it.
func timeCache(b *testing.B, cl *api.Client, image string, nodes []string) time.Duration {
	b.Helper()
	start := time.Now()
	accepted, err := cl.CacheImage(context.Background(), kit.NS, image, api.ImageCacheRequest{Nodes: nodes})
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Minute)
	for {
		j, err := cl.GetJob(context.Background(), kit.NS, accepted.JobName)
		if err == nil && j.State == api.JobSucceeded {
			return time.Since(start)
		}
		if err == nil && j.State == api.JobFailed {
			b.Fatalf("cache %s: %+v", image, j)
		}
		if time.Now().After(deadline) {
			b.Fatalf("cache %s: not done in 20 minutes: %+v %v", image, j, err)
		}
		time.Sleep(20 * time.Millisecond) // a poll's pace
	}
}
