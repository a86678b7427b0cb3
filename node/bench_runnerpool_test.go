package node_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/githubapi"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// BenchmarkRunnerPool_queued_to_started measures, on real libvirt, the time
// from a GitHub Actions job's queued event to its runner taking it (as
// GitHub's stand-in sees it: the runner inside mini-linux asking for its
// job), one job at a time, for a pool of a warm VM config (its VMs restored
// from a booted template) next to a pool of the same image and shape that
// boots each VM, alternately in the same run. Goal: warm p50 under 2 s.
func BenchmarkRunnerPool_queued_to_started(b *testing.B) {
	image := guest.RequireLibvirt(b)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		b.Fatal(err)
	}
	gh := githubapi.Start(b, key, "")
	serveToGuests(b, gh, 11)

	// The cold pool's peer keeps no templates: a template of the same image
	// and shape would serve its VMs too.
	clusters := map[string]*testcluster.Cluster{}
	clients := map[string]*api.Client{}
	for i, kind := range []string{"warm", "cold"} {
		c := testcluster.New(b, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "bpool" + kind, Subnet: 11 + i, Templates: 1 - i,
			Capacity: raftfsm.Capacity{CPU: 16, MemoryBytes: 16 << 30}, RunnerPollInterval: time.Hour})
		m := c.WaitLeader()
		cl := c.Client(m)
		clusters[kind], clients[kind] = c, cl
		upload(b, cl, "mini-linux", image)
		if _, err := cl.CreateVMConfig(context.Background(), ns, api.VMConfig{Name: "runner", Image: "mini-linux", CPU: 1, Memory: 0.25, Warm: kind == "warm"}); err != nil {
			b.Fatal(err)
		}
		pool, err := cl.CreateRunnerPool(context.Background(), ns, api.RunnerPoolRequest{Name: kind, VMConfig: "runner", Labels: []string{"svc-" + kind}, Max: 1,
			RunnerCommand: "/usr/lib/svc/ghrunner --work 100ms --jitconfig {jitconfig}", JobTimeout: "30m",
			GitHub: api.RunnerPoolGitHubRequest{URL: "https://github.com/acme/app", APIBase: gh.URL, Token: gh.Token, WebhookSecret: "hook-" + kind}})
		if err != nil {
			b.Fatal(err)
		}
		gh.Hook("http://"+m.Peer.APIAddr()+pool.WebhookPath, []byte("hook-"+kind))
		if kind == "warm" {
			waitWarmFor(b, c, cl, 3*time.Minute, "runner", m.Name)
		}
	}

	times := map[string][]time.Duration{}
	b.ResetTimer()
	for range b.N {
		for _, kind := range []string{"warm", "cold"} {
			job := gh.Queue(context.Background(), "acme/app", false, []string{"self-hosted", "svc-" + kind})[0]
			var took time.Duration
			c, cl := clusters[kind], clients[kind]
			c.WaitFor(kind+" job done and its VM gone", 5*time.Minute, func() error {
				j := gh.Jobs()[job.ID]
				if j.Status != "completed" {
					return fmt.Errorf("job %d %s", j.ID, j.Status)
				}
				took = j.StartedAt.Sub(j.QueuedAt)
				p, err := cl.GetRunnerPool(context.Background(), ns, kind)
				if err != nil || p.Status.VMs+p.Status.Queued+p.Status.Starting+p.Status.Running != 0 {
					return fmt.Errorf("pool %+v %v", p.Status, err)
				}
				return nil
			})
			times[kind] = append(times[kind], took)
		}
	}
	b.StopTimer()
	w50, c50 := percentile(times["warm"], 0.5), percentile(times["cold"], 0.5)
	b.ReportMetric(ms(w50), "warm-p50-ms")
	b.ReportMetric(ms(percentile(times["warm"], 0.95)), "warm-p95-ms")
	b.ReportMetric(ms(c50), "cold-p50-ms")
	b.ReportMetric(ms(percentile(times["cold"], 0.95)), "cold-p95-ms")
	b.ReportMetric(float64(w50)/float64(c50), "warm/cold-p50")
	b.ReportMetric(0, "ns/op")
}
