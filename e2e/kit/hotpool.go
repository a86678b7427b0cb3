package kit

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// WaitHot waits until the config shows want free hot guests on node.
func WaitHot(t *testing.T, c *testcluster.Cluster, cl *api.Client, config, node string, want int) {
	t.Helper()
	WaitHotFor(t, c, cl, 30*time.Second, config, node, want)
}

// HotRig is a one-peer cluster with the fake hypervisor's agent, image tiny
// and config ci (1 CPU, 1 GiB, warm, hot): its pool filled.
func HotRig(t *testing.T, hot int) (*testcluster.Cluster, *testcluster.Member, *api.Client) {
	t.Helper()
	c := testcluster.New(t, 1, testcluster.Options{Templates: 1, GuestAgent: true, Capacity: raftfsm.Capacity{CPU: 32, MemoryBytes: 64 << 30}})
	m := c.WaitLeader()
	cl := c.Client(m)
	Upload(t, cl, "tiny", TinyImage(t))
	if _, err := cl.CreateVMConfig(Ctx(t), NS, api.VMConfig{Name: "ci", Image: "tiny", CPU: 1, Memory: 1, Warm: true, Hot: hot}); err != nil {
		t.Fatal(err)
	}
	WaitHot(t, c, cl, "ci", m.Name, hot)
	return c, m, cl
}

func WaitWarmFor(t testing.TB, c *testcluster.Cluster, cl *api.Client, timeout time.Duration, config string, want ...string) api.VMConfig {
	t.Helper()
	var got api.VMConfig
	c.WaitFor(fmt.Sprintf("vmconfig %s warm on %v", config, want), timeout, func() error {
		var err error
		if got, err = cl.GetVMConfig(Ctx(t), NS, config); err != nil {
			return err
		}
		if !slices.Equal(got.WarmNodes, want) {
			return fmt.Errorf("warmNodes %v", got.WarmNodes)
		}
		return nil
	})
	return got
}

// WaitHotFor waits until the config shows want free hot guests on node.
func WaitHotFor(t *testing.T, c *testcluster.Cluster, cl *api.Client, timeout time.Duration, config, node string, want int) {
	t.Helper()
	c.WaitFor(fmt.Sprintf("%d hot guests of %s on %s", want, config, node), timeout, func() error {
		got, err := cl.GetVMConfig(Ctx(t), NS, config)
		if err != nil {
			return err
		}
		if got.HotNodes[node] != want {
			return fmt.Errorf("hotNodes %v", got.HotNodes)
		}
		return nil
	})
}
