package bench

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// BenchmarkDeploy_hot_vs_template_vs_boot measures, on real libvirt, the
// deploy call to the guest's SSH banner and to a finished SSH command (on
// one connection, as a person's ssh makes it) for
// VMs that claim a hot guest of a config with --hot 1 (restored and made
// its own before the call), VMs restored from a warm config's booted
// template (their identity step run before they are Running), and cold
// boots of the same image and shape (CPU 1, 256 MiB), on three peers, in
// turn in the same run; each hot deploy waits for the pool to have refilled.
// It also reports the deploy call's answer (the VM Running), and the cold
// guests' boot steps as their consoles time them from the kernel's start.
// Goals: hot p50 under 500 ms to a finished command; the restored p50 at
// most a quarter of the cold one and under 2 s.
func BenchmarkDeploy_hot_vs_template_vs_boot(b *testing.B) {
	image := guest.RequireLibvirt(b)
	capacity := raftfsm.Capacity{CPU: 16, MemoryBytes: 16 << 30}
	hot := testcluster.New(b, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "bhot", Subnet: 14, Templates: 1, Capacity: capacity})
	warm := testcluster.New(b, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "bwarm", Subnet: 6, Templates: 1, Capacity: capacity})
	cold := testcluster.New(b, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "bcold", Subnet: 7, Capacity: capacity})
	config := api.VMConfig{Name: "ci", Image: "mini-linux", CPU: 1, Memory: 0.25}
	for _, c := range []*testcluster.Cluster{hot, warm, cold} {
		cl := c.Client(c.Members[0])
		kit.Upload(b, cl, "mini-linux", image)
		config.Warm, config.Hot = c != cold, 0
		if c == hot {
			config.Hot = 1
		}
		if _, err := cl.CreateVMConfig(context.Background(), kit.NS, config); err != nil {
			b.Fatal(err)
		}
	}
	hcl, wcl, ccl := hot.Client(hot.Members[0]), warm.Client(warm.Members[0]), cold.Client(cold.Members[0])
	ready := func(c *testcluster.Cluster, cl *api.Client, what string, ok func(api.VMConfig) bool) {
		c.WaitFor(what, 3*time.Minute, func() error {
			cfg, err := cl.GetVMConfig(context.Background(), kit.NS, "ci")
			if err != nil || !ok(cfg) {
				return fmt.Errorf("warmNodes %v hotNodes %v %v", cfg.WarmNodes, cfg.HotNodes, err)
			}
			return nil
		})
	}
	hotReady := func() {
		ready(hot, hcl, "the hot guest ready", func(c api.VMConfig) bool { return c.HotNodes[hot.Members[0].Name] == 1 })
	}
	ready(warm, wcl, "the template ready", func(c api.VMConfig) bool { return len(c.WarmNodes) == 1 })
	hotReady()
	steps := map[string][]time.Duration{} // the cold guests' boot steps, from the kernel's start
	kinds := []struct {
		c              *testcluster.Cluster
		cl             *api.Client
		from, name     string
		times, banners []time.Duration
		calls          []time.Duration // to the deploy call's answer: Running
	}{{c: hot, cl: hcl, from: raftfsm.StartedFromHot, name: "hot"}, {c: warm, cl: wcl, from: raftfsm.StartedFromTemplate, name: "template"},
		{c: cold, cl: ccl, from: raftfsm.StartedFromBoot, name: "boot"}}
	b.ResetTimer()
	for range b.N {
		for i := range kinds {
			run := &kinds[i]
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			vm, err := run.cl.DeployVM(ctx, kit.NS, api.DeployRequest{VMConfig: "ci"})
			run.calls = append(run.calls, time.Since(start))
			var session guest.Timed
			if err == nil {
				// One connection, as a person's ssh makes it: its banner,
				// then the command.
				session, err = guest.WaitRunTimed(ctx, kit.SSHAddr(vm), "admin", "admin", "true")
			}
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			run.times, run.banners = append(run.times, session.Done.Sub(start)), append(run.banners, session.Banner.Sub(start))
			b.StopTimer()
			got, err := run.cl.GetVM(context.Background(), kit.NS, vm.Name)
			if err != nil || got.StartedFrom != run.from {
				b.Fatalf("%s started from %q (%v), want %s", vm.Name, got.StartedFrom, err, run.from)
			}
			rec, _ := run.c.Members[0].Peer.FSM().VM(kit.NS, vm.Name)
			if run.c == cold {
				log, err := cold.Members[0].Libvirt.ConsoleLog(hypervisor.DomainName(vm.Node, kit.NS, vm.Name))
				if err != nil {
					b.Fatal(err)
				}
				for step, at := range bootSteps(string(log)) {
					steps[step] = append(steps[step], at)
				}
			}
			if err := run.cl.DeleteVM(context.Background(), kit.NS, vm.Name); err != nil {
				b.Fatal(err)
			}
			run.c.WaitFor("the VM's domain removed", time.Minute, func() error {
				doms, err := run.c.Members[0].Libvirt.List(context.Background())
				for _, d := range doms {
					if d.Name == hypervisor.DomainFor(vm.Node, kit.NS, vm.Name, rec.Domain) {
						return fmt.Errorf("%s left", d.Name)
					}
				}
				return err
			})
			if run.c == hot {
				hotReady()
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	for _, k := range kinds {
		b.ReportMetric(ms(percentile(k.calls, 0.5)), k.name+"-running-p50-ms")
		b.ReportMetric(ms(percentile(k.banners, 0.5)), k.name+"-banner-p50-ms")
		b.ReportMetric(ms(percentile(k.times, 0.5)), k.name+"-ssh-p50-ms")
		b.ReportMetric(ms(percentile(k.times, 0.95)), k.name+"-ssh-p95-ms")
	}
	for _, step := range bootStepNames {
		b.ReportMetric(ms(percentile(steps[step], 0.5)), "bootstep-"+step+"-p50-ms")
	}
	b.ReportMetric(float64(percentile(kinds[1].times, 0.5))/float64(percentile(kinds[2].times, 0.5)), "template/boot-p50")
	b.ReportMetric(float64(percentile(kinds[0].times, 0.5))/float64(percentile(kinds[2].times, 0.5)), "hot/boot-p50")
	b.ReportMetric(0, "ns/op")
}

// bootStepNames are the steps of mini-linux's boot its console tells, in
// order: its init started (the kernel's boot done), its modules loaded,
// its disk mounted, the SSH server started (the identity made), the guest
// agent started, and ready.
var bootStepNames = []string{"init", "modules", "disk", "ssh", "agent", "ready"}

// bootLine is a step mini-linux's init logs to the serial console, with the
// seconds since the kernel started.
var bootLine = regexp.MustCompile(`mini-linux: \[([0-9.]+)\] (.*)`)

// bootSteps returns when each of bootStepNames happened in a console log,
// from the kernel's start.
func bootSteps(log string) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, m := range bootLine.FindAllStringSubmatch(log, -1) {
		secs, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		step := ""
		switch msg := strings.TrimSpace(m[2]); {
		case msg == "init started":
			step = "init"
		case msg == "modules loaded":
			step = "modules"
		case strings.Contains(msg, "mounted on /data"):
			step = "disk"
		case msg == "ssh server started":
			step = "ssh"
		case strings.HasPrefix(msg, "guest agent on"):
			step = "agent"
		case msg == "ready":
			step = "ready"
		}
		if step != "" {
			out[step] = time.Duration(secs * float64(time.Second))
		}
	}
	return out
}

func TestBootSteps_from_the_console(t *testing.T) {
	log := "[    0.000000] Linux version\nmini-linux: [0.91] init started\nmini-linux: [1.52] modules loaded\r\nmini-linux: [2.10] /dev/vda mounted on /data\n" +
		"mini-linux: [3.75] ssh server started\nmini-linux: [3.90] guest agent on vport1p1\nmini-linux: [3.91] ready\nmini-linux: /dev/vda mounted on /data\n"
	got := bootSteps(log)
	want := map[string]time.Duration{"init": 910 * time.Millisecond, "modules": 1520 * time.Millisecond, "disk": 2100 * time.Millisecond, "ssh": 3750 * time.Millisecond,
		"agent": 3900 * time.Millisecond, "ready": 3910 * time.Millisecond}
	for _, step := range bootStepNames {
		if got[step] != want[step] {
			t.Errorf("%s at %v, want %v", step, got[step], want[step])
		}
	}
}
