package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// BenchmarkDeploy_template_vs_boot measures, on real libvirt, the deploy
// call to the guest's SSH banner and to a finished SSH command for VMs
// restored from a warm config's booted template (their identity step run
// before they are Running), next to cold boots of the same image and shape
// (CPU 1, 256 MiB) on a peer without templates, alternately in the same run.
// Goal: the restored p50 to a finished command at most a quarter of the cold
// one and under 2 s.
func BenchmarkDeploy_template_vs_boot(b *testing.B) {
	image := guest.RequireLibvirt(b)
	capacity := raftfsm.Capacity{CPU: 16, MemoryBytes: 16 << 30}
	warm := testcluster.New(b, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "bwarm", Subnet: 6, Templates: 1, Capacity: capacity})
	cold := testcluster.New(b, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "bcold", Subnet: 7, Capacity: capacity})
	config := api.VMConfig{Name: "ci", Image: "mini-linux", CPU: 1, Memory: 0.25}
	for _, c := range []*testcluster.Cluster{warm, cold} {
		cl := c.Client(c.Members[0])
		upload(b, cl, "mini-linux", image)
		config.Warm = c == warm
		if _, err := cl.CreateVMConfig(context.Background(), ns, config); err != nil {
			b.Fatal(err)
		}
	}
	wcl, ccl := warm.Client(warm.Members[0]), cold.Client(cold.Members[0])
	warm.WaitFor("the template ready", 3*time.Minute, func() error {
		c, err := wcl.GetVMConfig(context.Background(), ns, "ci")
		if err != nil || len(c.WarmNodes) == 0 {
			return fmt.Errorf("warmNodes %v %v", c.WarmNodes, err)
		}
		return nil
	})
	var restored, booted, restoredBanner, bootedBanner []time.Duration
	b.ResetTimer()
	for range b.N {
		for _, run := range []struct {
			c       *testcluster.Cluster
			cl      *api.Client
			times   *[]time.Duration
			banners *[]time.Duration
			from    string
		}{{warm, wcl, &restored, &restoredBanner, "template"}, {cold, ccl, &booted, &bootedBanner, "boot"}} {
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			var toBanner time.Duration
			vm, err := run.cl.DeployVM(ctx, ns, api.DeployRequest{VMConfig: "ci"})
			if err == nil {
				_, err = guest.WaitBanner(ctx, sshAddr(vm))
				toBanner = time.Since(start)
			}
			if err == nil {
				_, err = guest.WaitRun(ctx, sshAddr(vm), "admin", "admin", "true")
			}
			took := time.Since(start)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			*run.times = append(*run.times, took)
			*run.banners = append(*run.banners, toBanner)
			b.StopTimer()
			if got, err := run.cl.GetVM(context.Background(), ns, vm.Name); err != nil || got.StartedFrom != run.from {
				b.Fatalf("%s started from %q (%v), want %s", vm.Name, got.StartedFrom, err, run.from)
			}
			if err := run.cl.DeleteVM(context.Background(), ns, vm.Name); err != nil {
				b.Fatal(err)
			}
			run.c.WaitFor("the VM's domain removed", time.Minute, func() error {
				doms, err := run.c.Members[0].Libvirt.List(context.Background())
				for _, d := range doms {
					if d.Name == hypervisor.DomainName(vm.Node, ns, vm.Name) {
						return fmt.Errorf("%s left", d.Name)
					}
				}
				return err
			})
			b.StartTimer()
		}
	}
	b.StopTimer()
	rp50, bp50 := percentile(restored, 0.5), percentile(booted, 0.5)
	b.ReportMetric(ms(percentile(restoredBanner, 0.5)), "template-banner-p50-ms")
	b.ReportMetric(ms(percentile(bootedBanner, 0.5)), "boot-banner-p50-ms")
	b.ReportMetric(ms(rp50), "template-ssh-p50-ms")
	b.ReportMetric(ms(percentile(restored, 0.95)), "template-ssh-p95-ms")
	b.ReportMetric(ms(bp50), "boot-ssh-p50-ms")
	b.ReportMetric(ms(percentile(booted, 0.95)), "boot-ssh-p95-ms")
	b.ReportMetric(float64(rp50)/float64(bp50), "template/boot-p50")
	b.ReportMetric(0, "ns/op")
}
