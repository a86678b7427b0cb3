package ocidisk

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/svc-project/svc/testkit/registrytest"
)

// benchDiskSize is the disk the registry benchmarks move: half data, half zeros.
const benchDiskSize = 1 << 30

// benchDisk writes a 1 GiB raw disk whose first half is random data.
func benchDisk(b *testing.B) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "disk.raw")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, benchDiskSize/2); err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(benchDiskSize); err != nil {
		b.Fatal(err)
	}
	return path
}

// crane builds go-containerregistry's own CLI from the module cache.
func crane(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "crane")
	// -trimpath, as make build: the packages svc's build compiled serve this one.
	out, err := exec.Command("go", "build", "-trimpath", "-o", bin, "github.com/google/go-containerregistry/cmd/crane").CombinedOutput()
	if err != nil {
		b.Fatalf("build crane: %v\n%s", err, out)
	}
	return bin
}

// runCrane runs crane against the test registry, logged in through its own
// docker config.
func runCrane(b *testing.B, bin, dockerConfig string, args ...string) {
	b.Helper()
	cmd := exec.Command(bin, append(args, "--insecure")...)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dockerConfig)
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("crane %v: %v\n%s", args, err, out)
	}
}

// tarOf writes a tar holding the disk, the layer crane pushes.
func tarOf(b *testing.B, disk string) string {
	b.Helper()
	path := disk + ".tar"
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	in, err := os.Open(disk)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	tw := tar.NewWriter(out)
	if err := tw.WriteHeader(&tar.Header{Name: "disk/disk.raw", Typeflag: tar.TypeReg, Mode: 0o644, Size: benchDiskSize}); err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(tw, in); err != nil {
		b.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

func mbps(d time.Duration) float64 { return float64(benchDiskSize) / 1e6 / d.Seconds() }

// BenchmarkRegistry_1GiB pushes and pulls a 1 GiB disk (half data, half
// zeros) through a local registry with svc's format and with crane (one
// gzip layer, go-containerregistry's own tool) in the same run, then pushes
// again after 1 % of the disk changed.
func BenchmarkRegistry_1GiB(b *testing.B) {
	reg := registrytest.Start(b, registrytest.Options{})
	creds := Registry{Username: reg.Username, Password: reg.Password, Insecure: true}
	disk := benchDisk(b)
	craneBin := crane(b)
	dockerConfig := b.TempDir()
	runCrane(b, craneBin, dockerConfig, "auth", "login", reg.Host, "-u", reg.Username, "-p", reg.Password)
	layer := tarOf(b, disk)
	ctx := context.Background()
	var svcPush, svcPull, cranePush, cranePull, repush time.Duration
	var repushBytes, craneRepushBytes int64
	for i := range b.N {
		// A repository per run: a second run must not find the chunks there.
		r, push, pull := pushPull(b, creds, fmt.Sprintf("%s/bench/svc-%d:v1", reg.Host, i), disk, Config{Kind: KindImage})
		svcPush, svcPull = svcPush+push, svcPull+pull
		dst := filepath.Join(b.TempDir(), "pulled.raw")

		craneRef := fmt.Sprintf("%s/bench/crane-%d:v1", reg.Host, i)
		start := time.Now()
		runCrane(b, craneBin, dockerConfig, "append", "-f", layer, "-t", craneRef)
		cranePush += time.Since(start)
		start = time.Now()
		runCrane(b, craneBin, dockerConfig, "pull", craneRef, dst)
		cranePull += time.Since(start)
		_ = os.Remove(dst)

		// 1 % of the disk changes (inside its data half) and is pushed again.
		changeOnePercent(b, disk, int64(i))
		before := reg.Received()
		start = time.Now()
		if _, err := Push(ctx, r, creds, disk, Config{Kind: KindImage}, nil); err != nil {
			b.Fatal(err)
		}
		repush += time.Since(start)
		repushBytes += reg.Received() - before
		changeOnePercent(b, layer, int64(i)) // the same change in crane's layer
		before = reg.Received()
		runCrane(b, craneBin, dockerConfig, "append", "-f", layer, "-t", craneRef)
		craneRepushBytes += reg.Received() - before
	}
	n := float64(b.N)
	b.ReportMetric(mbps(svcPush/time.Duration(b.N)), "svc-push-MB/s")
	b.ReportMetric(mbps(cranePush/time.Duration(b.N)), "crane-push-MB/s")
	b.ReportMetric(cranePush.Seconds()/svcPush.Seconds(), "push-x-crane")
	b.ReportMetric(mbps(svcPull/time.Duration(b.N)), "svc-pull-MB/s")
	b.ReportMetric(mbps(cranePull/time.Duration(b.N)), "crane-pull-MB/s")
	b.ReportMetric(cranePull.Seconds()/svcPull.Seconds(), "pull-x-crane")
	b.ReportMetric(repush.Seconds()/n, "svc-repush-s")
	b.ReportMetric(float64(repushBytes)/n/1e6, "svc-repush-MB")
	b.ReportMetric(float64(craneRepushBytes)/n/1e6, "crane-repush-MB")
}

// pushPull pushes the disk to ref and pulls it back into a file it then
// removes, timing both.
func pushPull(b *testing.B, creds Registry, ref, disk string, cfg Config) (name.Reference, time.Duration, time.Duration) {
	b.Helper()
	ctx := context.Background()
	r, err := ParseReference(ref, true, false)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := Push(ctx, r, creds, disk, cfg, nil); err != nil {
		b.Fatal(err)
	}
	push := time.Since(start)
	res, err := Resolve(ctx, r, creds)
	if err != nil {
		b.Fatal(err)
	}
	dst := filepath.Join(b.TempDir(), "pulled.raw")
	defer os.Remove(dst)
	start = time.Now()
	if _, err := Pull(ctx, res, creds, dst, nil, nil); err != nil {
		b.Fatal(err)
	}
	return r, push, time.Since(start)
}

// changeOnePercent overwrites 1 % of the disk (10 MiB, at an offset that
// moves with seed) with new random bytes.
func changeOnePercent(b *testing.B, path string, seed int64) {
	b.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, benchDiskSize/100)
	_, _ = rand.Read(buf)
	if _, err := f.WriteAt(buf, (seed*37<<20)%(benchDiskSize/2-int64(len(buf)))+4096); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRegistry_chunkSize pushes and pulls the 1 GiB disk with chunks of
// several sizes: the figures behind DefaultChunkSize.
func BenchmarkRegistry_chunkSize(b *testing.B) {
	reg := registrytest.Start(b, registrytest.Options{})
	creds := Registry{Username: reg.Username, Password: reg.Password, Insecure: true}
	disk := benchDisk(b)
	for _, mib := range []int64{16, 64, 256} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			var push, pull time.Duration
			for i := range b.N {
				_, p, l := pushPull(b, creds, fmt.Sprintf("%s/chunks/m%d-%d:v1", reg.Host, mib, i), disk, Config{Kind: KindImage, ChunkSize: mib << 20})
				push, pull = push+p, pull+l
			}
			b.ReportMetric(mbps(push/time.Duration(b.N)), "push-MB/s")
			b.ReportMetric(mbps(pull/time.Duration(b.N)), "pull-MB/s")
		})
	}
}
