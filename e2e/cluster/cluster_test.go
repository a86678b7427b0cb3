package cluster

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

func hasTag(nodes []api.Node, name, tag string) bool {
	for _, n := range nodes {
		if n.Name == name {
			return slices.Contains(n.Tags, tag)
		}
	}
	return false
}

func TestCluster_forms(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	for _, m := range c.Members {
		var info api.ClusterInfo
		c.WaitFor("cluster-info to list 3 raft peers", 10*time.Second, func() error {
			var err error
			info, err = c.Client(m).ClusterInfo(kit.Ctx(t))
			if err != nil {
				return err
			}
			if len(info.Peers) != 3 {
				return fmt.Errorf("%d peers", len(info.Peers))
			}
			return nil
		})
		if info.Leader != leader.Name || info.ClusterID == "" {
			t.Fatalf("%s: cluster-info %+v", m.Name, info)
		}
		roles := map[string]int{}
		for _, p := range info.Peers {
			roles[p.Raft]++
			if p.APIAddr == "" {
				t.Fatalf("peer %s has no API address", p.Name)
			}
		}
		if roles[api.RaftLeader] != 1 || roles[api.RaftVoter] != 2 {
			t.Fatalf("%s: roles %v", m.Name, roles)
		}
		nodes, err := c.Client(m).ListNodes(kit.Ctx(t), api.DefaultNamespace, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(nodes) != 3 {
			t.Fatalf("%d nodes", len(nodes))
		}
		for _, n := range nodes {
			if n.Phase != api.PhaseReady || n.NodeType != api.NodeTypeWorker || n.AllocatableCPU != 4 || n.AvailableCPU != 4 ||
				n.AllocatableMemory != "8.59G" || n.NodeIP != "127.0.0.1" || n.Tags == nil || n.Arch == "" || n.Namespace != api.DefaultNamespace {
				t.Fatalf("node record %+v", n)
			}
		}
	}
}

func TestCluster_forwarding_from_each_follower(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	for i, f := range c.Followers() {
		tag := fmt.Sprintf("from-follower-%d", i)
		n, err := c.Client(f).TagNode(kit.Ctx(t), api.DefaultNamespace, f.Name, tag)
		if err != nil {
			t.Fatalf("tag through %s: %v", f.Name, err)
		}
		if !slices.Contains(n.Tags, tag) {
			t.Fatalf("answer %+v lacks the tag", n)
		}
		// A consistent read through the same follower sees the write at once.
		nodes, err := c.Client(f).ListNodes(kit.Ctx(t), api.DefaultNamespace, true)
		if err != nil || !hasTag(nodes, f.Name, tag) {
			t.Fatalf("consistent read after write: %v %+v", err, nodes)
		}
		// Errors cross the hop unchanged.
		_, err = c.Client(f).TagNode(kit.Ctx(t), api.DefaultNamespace, "no-such-node", "x")
		if api.CodeOf(err) != http.StatusNotFound || api.ReasonOf(err) != api.ReasonNotFound ||
			statusErr(err).Status.Message != `node "no-such-node" not found in namespace "svc-default"` {
			t.Fatalf("unknown node through %s: %v", f.Name, err)
		}
		_, err = c.Client(f).UntagNode(kit.Ctx(t), api.DefaultNamespace, f.Name, "bad tag!")
		if api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "tag") {
			t.Fatalf("bad tag through %s: %v", f.Name, err)
		}
	}
	// Every replica converges.
	for _, m := range c.Members {
		c.WaitFor("replica to see both tags", 10*time.Second, func() error {
			for i, f := range c.Followers() {
				if n, _ := m.Peer.FSM().Node(f.Name); !n.HasTag(fmt.Sprintf("from-follower-%d", i)) {
					return fmt.Errorf("%s lacks tag on %s", m.Name, f.Name)
				}
			}
			return nil
		})
	}
}

// A request a peer forwarded (proven by its certificate, over the fabric)
// is never forwarded again; a client cannot pass one off as forwarded to
// change its routing, on the API port or over HTTPS.
func TestCluster_forwarded_request_is_not_forwarded_again(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	f := c.Followers()[0]
	other := c.Followers()[1]
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	cases := []struct {
		name string
		url  string
		cl   *http.Client
		want int
	}{
		{name: "forwarded by a peer over the fabric", url: "https://" + f.Peer.Links().PeerAddr(f.Name), cl: &http.Client{Transport: other.Peer.Links().PeerTransport()}, want: http.StatusServiceUnavailable},
		{name: "a client's header on the API port is ignored", url: "http://" + f.Peer.APIAddr(), cl: http.DefaultClient, want: http.StatusOK},
		{name: "a client's header over HTTPS is ignored", url: "https://" + f.Peer.TLSAddr(), cl: insecure, want: http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, tc.url+"/api/v1/namespaces/svc-default/nodes/"+f.Name+"/tag", strings.NewReader(`{"tag":"x"}`))
			req.Header.Set(api.HeaderForwardedBy, "peer-9")
			req.Header.Set("Authorization", "Bearer "+c.Client(f).Token)
			resp, err := tc.cl.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want || (tc.want == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "") {
				t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		})
	}
}

func TestCluster_leader_killed(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	old := c.WaitLeader()
	c.Stop(old)
	newLeader := c.WaitLeader()
	if newLeader == old {
		t.Fatal("the stopped peer still leads")
	}
	for _, m := range c.Running() {
		c.WaitFor("a write through "+m.Name, 15*time.Second, func() error {
			_, err := c.Client(m).TagNode(kit.Ctx(t), api.DefaultNamespace, m.Name, "after-failover")
			return err
		})
	}
	c.WaitFor("the old leader's node NOT READY", 15*time.Second, func() error {
		if p := testcluster.NodePhase(newLeader, old.Name); p != api.PhaseNotReady {
			return fmt.Errorf("phase %q", p)
		}
		return nil
	})
}

func TestCluster_restart_keeps_tags_and_identity(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	m := c.Followers()[0]
	if _, err := c.Client(m).TagNode(kit.Ctx(t), api.DefaultNamespace, m.Name, "gpu-a100"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the tag to reach "+m.Name, 10*time.Second, func() error {
		if n, _ := m.Peer.FSM().Node(m.Name); !n.HasTag("gpu-a100") {
			return fmt.Errorf("no tag yet")
		}
		return nil
	})
	c.Stop(m)
	c.Restart(m) // no --join: it finds the cluster from its data dir
	// Straight from its own data dir, before anyone talks to it.
	if n, ok := m.Peer.FSM().Node(m.Name); !ok || !n.HasTag("gpu-a100") {
		t.Fatalf("restarted replica lost the tag: %+v", n)
	}
	c.WaitFor(m.Name+" READY again with the same identity", 20*time.Second, func() error {
		info, err := c.Client(m).ClusterInfo(kit.Ctx(t))
		if err != nil {
			return err
		}
		if len(info.Peers) != 3 || info.Leader == "" {
			return fmt.Errorf("cluster-info %+v", info)
		}
		nodes, err := c.Client(m).ListNodes(kit.Ctx(t), api.DefaultNamespace, true)
		if err != nil {
			return err
		}
		if len(nodes) != 3 || !hasTag(nodes, m.Name, "gpu-a100") {
			return fmt.Errorf("nodes %+v", nodes)
		}
		for _, n := range nodes {
			if n.Phase != api.PhaseReady {
				return fmt.Errorf("%s is %s", n.Name, n.Phase)
			}
		}
		return nil
	})
	if _, err := c.Client(m).UntagNode(kit.Ctx(t), api.DefaultNamespace, m.Name, "gpu-a100"); err != nil {
		t.Fatalf("write through the restarted peer: %v", err)
	}
}

func TestCluster_not_ready_while_peer_is_down(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	m := c.Followers()[1]
	c.Stop(m)
	c.WaitFor(m.Name+" NOT READY", 15*time.Second, func() error {
		nodes, err := c.Client(leader).ListNodes(kit.Ctx(t), api.DefaultNamespace, false)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.Name == m.Name && n.Phase == api.PhaseNotReady {
				return nil
			}
		}
		return fmt.Errorf("still READY")
	})
	c.Restart(m)
	c.WaitFor(m.Name+" READY", 20*time.Second, func() error {
		if p := testcluster.NodePhase(c.WaitLeader(), m.Name); p != api.PhaseReady {
			return fmt.Errorf("phase %q", p)
		}
		return nil
	})
}

func TestCluster_partitioned_minority_cannot_write(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	minority := c.Followers()[0]
	c.Partition(minority)

	var majority []*testcluster.Member
	for _, m := range c.Members {
		if m != minority {
			majority = append(majority, m)
		}
	}
	// The majority keeps writing.
	c.WaitFor("a write on the majority side", 15*time.Second, func() error {
		_, err := c.Client(majority[0]).TagNode(kit.Ctx(t), api.DefaultNamespace, majority[0].Name, "majority")
		return err
	})
	// The minority refuses writes with a clear error once it notices.
	c.WaitFor("the minority to refuse writes", 15*time.Second, func() error {
		_, err := c.Client(minority).TagNode(kit.Ctx(t), api.DefaultNamespace, minority.Name, "minority")
		if err == nil {
			return fmt.Errorf("the minority accepted a write")
		}
		var se *api.StatusError
		if api.CodeOf(err) != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "no leader") {
			return fmt.Errorf("unexpected answer: %v", err)
		}
		if se = statusErr(err); se.RetryAfter == "" {
			return fmt.Errorf("no Retry-After")
		}
		return nil
	})
	if n, _ := minority.Peer.FSM().Node(minority.Name); n.HasTag("minority") {
		t.Fatal("the minority's write was applied")
	}
	c.Heal()
	c.WaitFor("the healed peer to catch up", 20*time.Second, func() error {
		if n, _ := minority.Peer.FSM().Node(majority[0].Name); !n.HasTag("majority") {
			return fmt.Errorf("not yet")
		}
		_, err := c.Client(minority).TagNode(kit.Ctx(t), api.DefaultNamespace, minority.Name, "healed")
		return err
	})
}

func TestCluster_partitioned_leader_steps_down(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	old := c.WaitLeader()
	c.Partition(old)
	c.WaitFor("the old leader to refuse writes", 15*time.Second, func() error {
		_, err := c.Client(old).TagNode(kit.Ctx(t), api.DefaultNamespace, old.Name, "cut-off")
		if api.CodeOf(err) == http.StatusServiceUnavailable || api.CodeOf(err) == http.StatusGatewayTimeout {
			return nil
		}
		return fmt.Errorf("answer: %v", err)
	})
	other := c.Followers()
	c.WaitFor("a new leader on the majority side", 15*time.Second, func() error {
		for _, m := range c.Running() {
			if m != old && m.Peer.IsLeader() {
				return nil
			}
		}
		return fmt.Errorf("none yet (%d followers)", len(other))
	})
	c.Heal()
	c.WaitLeader()
}

func TestCluster_nonvoter_promoted_when_voter_gone(t *testing.T) {
	c := testcluster.New(t, 4, testcluster.Options{ReapAfter: 2 * time.Second})
	leader := c.WaitLeader()
	roles := func() (map[string]string, error) {
		l := c.Leader()
		if l == nil { // between leaders: the voter stopped may have led
			return nil, errors.New("no leader right now")
		}
		info, err := c.Client(l).ClusterInfo(kit.Ctx(t))
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, p := range info.Peers {
			out[p.Name] = p.Raft
		}
		return out, nil
	}
	var nonvoter string
	c.WaitFor("3 voters and 1 non-voter", 15*time.Second, func() error {
		r, err := roles()
		if err != nil {
			return err
		}
		nonvoter = ""
		for name, role := range r {
			if role == api.RaftNonvoter {
				nonvoter = name
			}
		}
		if len(r) != 4 || nonvoter == "" {
			return fmt.Errorf("roles %v", r)
		}
		return nil
	})
	var victim *testcluster.Member
	for _, m := range c.Members {
		if m != leader && m.Name != nonvoter {
			victim = m
			break
		}
	}
	c.Stop(victim)
	c.WaitFor(nonvoter+" promoted and "+victim.Name+" removed", 30*time.Second, func() error {
		r, err := roles()
		if err != nil {
			return err
		}
		if _, still := r[victim.Name]; still || r[nonvoter] != api.RaftVoter || len(r) != 3 {
			return fmt.Errorf("roles %v", r)
		}
		return nil
	})
}

func statusErr(err error) *api.StatusError {
	se, _ := err.(*api.StatusError)
	if se == nil {
		return &api.StatusError{}
	}
	return se
}

// sendWrite sends a write as a client following API.md does: answered 503
// with Retry-After (leadership changed while it was in flight, as when a
// loaded machine stalls the test's process past the leader's lease), it
// goes again once a leader is known, at most 3 times. The write it resent
// may have been applied before its 503: on a resend, an answer of
// appliedCode (409 for a create, 404 for a delete; 0 for a write that is
// the same when applied twice) means it was, and is no error.
func sendWrite(t *testing.T, c *testcluster.Cluster, appliedCode int, write func() error) error {
	t.Helper()
	var err error
	for i := range 3 {
		err = write()
		se := statusErr(err)
		if i > 0 && appliedCode != 0 && se.Status.Code == appliedCode {
			return nil
		}
		if err == nil || se.Status.Code != http.StatusServiceUnavailable || se.RetryAfter == "" {
			return err
		}
		t.Logf("a write was answered %v; sending it again once a leader is known", err)
		c.WaitLeader()
	}
	return err
}

// A write through a follower is answered as soon as the leader applied it,
// yet a read with the same token through the same follower, on a new
// connection, right after the write returned, sees it (production Raft
// timings: the follower learns the commit index only with the next
// heartbeat, a tenth of a second later).
func TestCluster_read_your_writes_through_a_follower(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{ProductionTiming: true})
	c.WaitLeader()
	f := c.Followers()[0]
	token := c.Client(f).Token
	fresh := func() *api.Client { // a new connection for every call
		cl := api.NewClient("http://"+f.Peer.APIAddr(), token)
		cl.HTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		return cl
	}
	// Adding a tag twice is adding it once (sendWrite). What is checked is
	// the read after a write that was answered 200.
	for i := range 20 {
		tag := fmt.Sprintf("ryw-%d", i)
		if err := sendWrite(t, c, 0, func() error {
			_, err := fresh().TagNode(kit.Ctx(t), api.DefaultNamespace, f.Name, tag)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		nodes, err := fresh().ListNodes(kit.Ctx(t), api.DefaultNamespace, false)
		if err != nil || !hasTag(nodes, f.Name, tag) {
			t.Fatalf("write %d not seen by the next read: %v", i, err)
		}
	}
}
