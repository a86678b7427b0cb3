package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftstore"
	"github.com/svc-project/svc/testkit/testcluster"
)

// boundedCluster is a cluster of n peers whose Raft group is its voters
// and one replica (peer.Config.Replicas), a dead replica replaced after
// two seconds.
func boundedCluster(t *testing.T, n int) *testcluster.Cluster {
	t.Helper()
	return testcluster.New(t, n, testcluster.Options{Configure: func(_ int, cfg *peer.Config) {
		cfg.Replicas, cfg.ReplaceAfter = 1, 2*time.Second
	}})
}

// raftGroup waits until the leader's Raft configuration is want voters and
// one replica, and returns it.
func raftGroup(t *testing.T, c *testcluster.Cluster, voters int) []raftstore.Server {
	t.Helper()
	return raftGroupWith(t, c, voters, "")
}

// raftGroupWith is raftGroup with replica as the replica ("": any).
func raftGroupWith(t *testing.T, c *testcluster.Cluster, voters int, replica string) []raftstore.Server {
	t.Helper()
	var servers []raftstore.Server
	c.WaitFor(fmt.Sprintf("a Raft group of %d voters and a replica %s", voters, replica), 30*time.Second, func() error {
		l := c.Leader()
		if l == nil {
			return fmt.Errorf("no leader")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		if servers, err = l.Peer.Store().Servers(ctx); err != nil {
			return err
		}
		v := 0
		for _, s := range servers {
			if s.Voter {
				v++
			}
		}
		if v != voters || len(servers) != voters+1 {
			return fmt.Errorf("%d voters of %d servers", v, len(servers))
		}
		if replica != "" && !slices.ContainsFunc(servers, func(s raftstore.Server) bool { return s.ID == replica && !s.Voter }) {
			return fmt.Errorf("the replica is not %s: %+v", replica, servers)
		}
		return nil
	})
	return servers
}

// outside returns the running members the Raft group does not hold, and
// the group's replica.
func outside(c *testcluster.Cluster, servers []raftstore.Server) ([]*testcluster.Member, string) {
	var out []*testcluster.Member
	replica := ""
	for _, s := range servers {
		if !s.Voter {
			replica = s.ID
		}
	}
	for _, m := range c.Running() {
		if !slices.ContainsFunc(servers, func(s raftstore.Server) bool { return s.ID == m.Name }) {
			out = append(out, m)
		}
	}
	return out, replica
}

// In a cluster of seven whose Raft group is bounded to its five voters
// and one replica, the seventh host is no Raft member: it follows the log
// through a member, and serves every call as a member would: a write
// through it then a read of it (read-your-writes), a watch, a deploy
// placed on it, and its VM kept running and writes accepted when the
// leader changes.
func TestBounded_a_host_outside_the_raft_group_serves_the_api(t *testing.T) {
	c := boundedCluster(t, 7)
	out, _ := outside(c, raftGroup(t, c, 5))
	if len(out) != 1 {
		t.Fatalf("%d hosts outside the Raft group, want 1", len(out))
	}
	f := out[0]
	cl := c.Client(f)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// read-your-writes through the host outside
	for i := range 3 {
		tag := fmt.Sprintf("ryw-%d", i)
		if _, err := cl.TagNode(ctx, kit.NS, f.Name, tag); err != nil {
			t.Fatal(err)
		}
		nodes, err := cl.ListNodes(ctx, kit.NS, false)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(nodes, func(n api.Node) bool { return n.Name == f.Name })
		if i < 0 || !slices.Contains(nodes[i].Tags, tag) {
			t.Fatalf("a read after the write of tag %s through %s: %+v", tag, f.Name, nodes)
		}
	}

	// a watch through it sees a deploy made elsewhere; a deploy placed on
	// it runs there
	w := watchVMs(cl, kit.NS, "")
	defer w.cancel()
	leader := c.WaitLeader()
	kit.TinyVM(t, c.Client(leader), "elsewhere", leader.Name)
	w.next(t, "ADDED", "elsewhere")
	vm := kit.TinyVM(t, cl, "here", f.Name)
	if vm.Node != f.Name || vm.Status != api.StatusRunning {
		t.Fatalf("the deploy on %s: %+v", f.Name, vm)
	}
	dom := hypervisor.DomainName(f.Name, kit.NS, "here")
	if st, ok := f.Fake.State(dom); !ok || st != hypervisor.StateRunning {
		t.Fatalf("the domain on %s: %v %v", f.Name, st, ok)
	}

	// the leader stops: the host's VM keeps running, writes go on
	c.Stop(leader)
	next := c.WaitLeader()
	t.Logf("%s stopped; %s leads", leader.Name, next.Name)
	c.WaitFor("a write through the host outside under the new leader", 30*time.Second, func() error {
		_, err := cl.TagNode(ctx, kit.NS, f.Name, "after-the-change")
		return err
	})
	got, err := cl.GetVM(ctx, kit.NS, "here")
	if err != nil || got.Status != api.StatusRunning {
		t.Fatalf("the VM on %s after the leader changed: %+v %v", f.Name, got, err)
	}
	if st, ok := f.Fake.State(dom); !ok || st != hypervisor.StateRunning {
		t.Fatalf("the domain on %s after the leader changed: %v %v", f.Name, st, ok)
	}
	if calls := strings.Join(f.Fake.Calls(), " "); strings.Count(calls, "create "+dom) != 1 {
		t.Fatalf("the domain was created again: %s", calls)
	}
}

// A replica that dies is replaced by the host that was outside the group,
// without an operator; the one that died, back, is outside and follows the
// log.
func TestBounded_a_dead_replica_is_replaced(t *testing.T) {
	c := boundedCluster(t, 7)
	out, replica := outside(c, raftGroup(t, c, 5))
	if len(out) != 1 || replica == "" {
		t.Fatalf("outside the group %d hosts, replica %q", len(out), replica)
	}
	var r *testcluster.Member
	for _, m := range c.Members {
		if m.Name == replica {
			r = m
		}
	}
	c.Crash(r)
	raftGroupWith(t, c, 5, out[0].Name)
	c.Restart(r)
	leader := c.WaitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Client(leader).TagNode(ctx, kit.NS, leader.Name, "while-back"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor(r.Name+", back outside the group, to follow the log", 30*time.Second, func() error {
		if n, ok := r.Peer.FSM().Node(leader.Name); !ok || !slices.Contains(n.Tags, "while-back") {
			return fmt.Errorf("%s does not have the write", r.Name)
		}
		return nil
	})
	if got, _ := outside(c, raftGroup(t, c, 5)); len(got) != 1 || got[0].Name != r.Name {
		t.Fatalf("outside the group after %s came back: %v", r.Name, got)
	}
}

// Every host of a bounded cluster restarted in turn (as an upgrade one
// host at a time does), the leader among them, while a client writes
// through any host: every write acknowledged is on every host after, the
// group is again five voters and a replica, and the host outside follows.
func TestBounded_every_host_restarted_in_turn_loses_no_write(t *testing.T) {
	c := boundedCluster(t, 7)
	raftGroup(t, c, 5)
	clients := make([]*api.Client, len(c.Members))
	for i, m := range c.Members {
		clients[i] = c.Client(m)
	}
	node := c.Members[0].Name
	var acked []string
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			tag := fmt.Sprintf("w-%d", k)
			if _, err := clients[k%len(clients)].TagNode(ctx, kit.NS, node, tag); err == nil {
				acked = append(acked, tag)
			}
			cancel()
		}
	}()
	for _, m := range c.Members {
		c.Stop(m)
		c.Restart(m)
		c.WaitCaughtUp(m)
		c.WaitLeader()
	}
	close(stop)
	<-done
	if len(acked) < 10 {
		t.Fatalf("only %d writes acknowledged during the restarts", len(acked))
	}
	for _, m := range c.Members {
		c.WaitFor(fmt.Sprintf("every acknowledged write (%d) on %s", len(acked), m.Name), 30*time.Second, func() error {
			n, ok := m.Peer.FSM().Node(node)
			if !ok {
				return fmt.Errorf("no node %s", node)
			}
			for _, tag := range acked {
				if !slices.Contains(n.Tags, tag) {
					return fmt.Errorf("%s lacks %s", m.Name, tag)
				}
			}
			return nil
		})
	}
	if out, _ := outside(c, raftGroup(t, c, 5)); len(out) != 1 {
		t.Fatalf("%d hosts outside the group after the restarts, want 1", len(out))
	}
	t.Logf("%d writes acknowledged while the seven hosts restarted in turn", len(acked))
}
