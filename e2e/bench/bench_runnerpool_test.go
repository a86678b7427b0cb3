package bench

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/githubapi"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// BenchmarkRunnerPool_queued_to_started measures, on real libvirt, the time
// from a GitHub Actions job's queued event to its runner taking it (as
// GitHub's stand-in sees it: the runner inside mini-linux asking for its
// job), one job at a time, for a pool of a hot VM config (--hot 1: its VM
// claims a guest restored beforehand; each hot job waits for the pool to
// have refilled), one of a warm config (its VMs restored from a booted
// template) and one of the same image and shape that boots each VM, in
// turn in the same run. Goals: hot p50 under 1 s, warm p50 under 2 s.
func BenchmarkRunnerPool_queued_to_started(b *testing.B) {
	image := guest.RequireLibvirt(b)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	gh := githubapi.Start(b, key, "")
	kit.ServeToGuests(b, gh, 11)

	// The cold pool's peer keeps no templates: a template of the same image
	// and shape would serve its VMs too.
	clusters := map[string]*testcluster.Cluster{}
	clients := map[string]*api.Client{}
	kinds := []string{"hot", "warm", "cold"}
	for i, kind := range kinds {
		templates := 1
		if kind == "cold" {
			templates = 0
		}
		c := testcluster.New(b, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "bpool" + kind, Subnet: []int{15, 11, 19}[i], Templates: templates,
			Capacity: raftfsm.Capacity{CPU: 16, MemoryBytes: 16 << 30}, RunnerPollInterval: time.Hour})
		m := c.WaitLeader()
		cl := c.Client(m)
		clusters[kind], clients[kind] = c, cl
		kit.Upload(b, cl, "mini-linux", image)
		if _, err := cl.CreateVMConfig(context.Background(), kit.NS, api.VMConfig{Name: "runner", Image: "mini-linux", CPU: 1, Memory: 0.25, Warm: kind != "cold", Hot: map[string]int{"hot": 1}[kind]}); err != nil {
			b.Fatal(err)
		}
		pool, err := cl.CreateRunnerPool(context.Background(), kit.NS, api.RunnerPoolRequest{Name: kind, VMConfig: "runner", Labels: []string{"svc-" + kind}, Max: 1,
			RunnerCommand: "/usr/lib/svc/ghrunner --work 100ms --jitconfig {jitconfig}", JobTimeout: "30m",
			GitHub: api.RunnerPoolGitHubRequest{URL: "https://github.com/acme/app", APIBase: gh.URL, Token: gh.Token, WebhookSecret: "hook-" + kind}})
		if err != nil {
			b.Fatal(err)
		}
		gh.Hook("http://"+m.Peer.APIAddr()+pool.WebhookPath, []byte("hook-"+kind))
		if kind != "cold" {
			kit.WaitWarmFor(b, c, cl, 3*time.Minute, "runner", m.Name)
		}
	}
	hotReady := func() {
		c, cl := clusters["hot"], clients["hot"]
		c.WaitFor("the hot guest ready", 3*time.Minute, func() error {
			cfg, err := cl.GetVMConfig(context.Background(), kit.NS, "runner")
			if err != nil || cfg.HotNodes[c.Members[0].Name] != 1 {
				return fmt.Errorf("hotNodes %v %v", cfg.HotNodes, err)
			}
			return nil
		})
	}

	times := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for _, kind := range kinds {
			if kind == "hot" {
				hotReady()
			}
			job := gh.Queue(context.Background(), "acme/app", false, []string{"self-hosted", "svc-" + kind})[0]
			var took time.Duration
			c, cl := clusters[kind], clients[kind]
			c.WaitFor(kind+" job done and its VM gone", 5*time.Minute, func() error {
				j := gh.Jobs()[job.ID]
				if j.Status != "completed" {
					return fmt.Errorf("job %d %s", j.ID, j.Status)
				}
				took = j.StartedAt.Sub(j.QueuedAt)
				p, err := cl.GetRunnerPool(context.Background(), kit.NS, kind)
				if err != nil || p.Status.VMs+p.Status.Queued+p.Status.Starting+p.Status.Running != 0 {
					return fmt.Errorf("pool %+v %v", p.Status, err)
				}
				return nil
			})
			times[kind] = append(times[kind], took)
		}
	}
	b.StopTimer()
	h50, w50, c50 := percentile(times["hot"], 0.5), percentile(times["warm"], 0.5), percentile(times["cold"], 0.5)
	b.ReportMetric(ms(h50), "hot-p50-ms")
	b.ReportMetric(ms(percentile(times["hot"], 0.95)), "hot-p95-ms")
	b.ReportMetric(ms(w50), "warm-p50-ms")
	b.ReportMetric(ms(percentile(times["warm"], 0.95)), "warm-p95-ms")
	b.ReportMetric(ms(c50), "cold-p50-ms")
	b.ReportMetric(ms(percentile(times["cold"], 0.95)), "cold-p95-ms")
	b.ReportMetric(float64(w50)/float64(c50), "warm/cold-p50")
	b.ReportMetric(0, "ns/op")
}
