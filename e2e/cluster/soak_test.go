package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Three peers with the production Raft timeouts on a machine whose every
// core is kept busy by other processes, taking a write every 20 ms: in
// SVC_SOAK (e.g. 10m; skipped without it) no peer starts an election.
// make failover-soak runs it for 10 minutes.
func TestRaft_no_spurious_elections_under_load(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("SVC_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("SVC_SOAK (a duration) runs it: make failover-soak")
	}
	c := testcluster.New(t, 3, testcluster.Options{ProductionTiming: true})
	leader := c.WaitLeader()
	changes := func() (n float64) {
		for _, m := range c.Members {
			n += kit.Metric(t, m, "svc_raft_leader_changes_total")
		}
		return n
	}
	before := changes()
	if before == 0 {
		t.Fatal("svc_raft_leader_changes_total counts nothing: the first election is missing")
	}
	for range runtime.NumCPU() {
		burner := exec.Command("sh", "-c", "while :; do :; done")
		if err := burner.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = burner.Process.Kill(); _ = burner.Wait() })
	}
	cl := c.Client(c.Followers()[0])
	deadline := time.Now().Add(d)
	writes, failed := 0, 0
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := cl.TagNode(ctx, api.DefaultNamespace, leader.Name, fmt.Sprintf("w%d", writes%8))
		cancel()
		writes++
		if err != nil {
			failed++
			t.Logf("write %d: %v", writes, err)
		}
		time.Sleep(20 * time.Millisecond) // the workload's pace
	}
	if after := changes(); after != before || c.Leader() != leader || failed > 0 {
		t.Fatalf("in %s under load: leader changes %v -> %v, leader %s -> %s, %d of %d writes failed", d, before, after, leader.Name, c.Leader().Name, failed, writes)
	}
	t.Logf("%s under load: %d writes, no election (leader changes counted: %v, the first election)", d, writes, before)
}
