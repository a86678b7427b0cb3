package cluster

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/testkit/testcluster"
)

// callsSince returns the driver calls made on a domain after the first n calls.
func callsSince(f *fake.Driver, n int, domain string) []string {
	var out []string
	for _, c := range f.Calls()[n:] {
		if strings.HasSuffix(c, " "+domain) {
			out = append(out, strings.Fields(c)[0])
		}
	}
	return out
}

// A peer comes back from a stop or a crash while the cluster moved on: a VM
// of its was deleted, a tag added, a user removed. Until its replica has
// caught up it acts on none of its stale state (no deleted VM started again,
// no VM it does not yet know removed) and serves nothing stale: every
// authenticated call is a 503 with Retry-After, never a 401 for a good token
// or an old list. Then it serves the new state and removes the deleted VM.
func TestCatchUp_restarted_peer_acts_on_and_serves_nothing_stale(t *testing.T) {
	for _, how := range []string{"stop", "crash"} {
		t.Run(how, func(t *testing.T) {
			c := testcluster.New(t, 3, testcluster.Options{})
			leader := c.WaitLeader()
			m := c.Followers()[0]
			cl := c.Client(leader)
			kit.Upload(t, cl, "tiny", kit.TinyImage(t))
			for _, name := range []string{"doomed", "kept"} {
				if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: name, Node: m.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.5)}); err != nil {
					t.Fatal(err)
				}
			}
			leaving := c.Token("leaving", false)
			doomed, kept := hypervisor.DomainName(m.Name, kit.NS, "doomed"), hypervisor.DomainName(m.Name, kit.NS, "kept")
			if how == "crash" {
				c.Crash(m)
			} else {
				c.Stop(m)
			}
			m.Fake.PowerOff() // the host went down with the peer
			if err := cl.DeleteVM(kit.Ctx(t), kit.NS, "doomed"); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.TagNode(kit.Ctx(t), kit.NS, leader.Name, "while-down"); err != nil {
				t.Fatal(err)
			}
			if _, err := leader.Peer.HostAdmin().RemoveUser(kit.Ctx(t), "leaving"); err != nil {
				t.Fatal(err)
			}

			// Back, but cut off: it cannot catch up.
			c.Partition(m)
			calls := len(m.Fake.Calls())
			c.Restart(m)
			for _, tok := range []string{c.Client(m).Token, leaving} {
				resp := get(t, "http://"+m.Peer.APIAddr()+"/api/v1/namespaces/"+kit.NS+"/nodes", tok)
				if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
					t.Fatalf("a peer that has not caught up answered %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
				}
			}
			c.WaitFor("reconcile passes on the stale replica", 20*time.Second, func() error {
				if m.Peer.Readiness().CaughtUp() {
					t.Fatal("caught up while cut off")
				}
				if n := kit.Metric(t, m, `svc_vm_reconcile_passes_total{result="waiting"}`); n < 3 {
					return fmt.Errorf("%v passes", n)
				}
				return nil
			})
			if got := callsSince(m.Fake, calls, doomed); len(got) != 0 {
				t.Fatalf("the stale replica acted on the deleted VM: %v", got)
			}
			if got := callsSince(m.Fake, calls, kept); len(got) != 0 {
				t.Fatalf("the stale replica acted on a VM before catching up: %v", got)
			}

			c.Heal()
			c.WaitCaughtUp(m)
			// The first answers after catching up are the new state.
			nodes, err := c.Client(m).ListNodes(kit.Ctx(t), kit.NS, false)
			if err != nil || !hasTag(nodes, leader.Name, "while-down") {
				t.Fatalf("first list after catching up: %v %+v", err, nodes)
			}
			if resp := get(t, "http://"+m.Peer.APIAddr()+"/api/v1/namespaces/"+kit.NS+"/nodes", leaving); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the removed user's token: %d", resp.StatusCode)
			}
			c.WaitFor("the deleted VM's domain removed and the kept one running", 20*time.Second, func() error {
				if _, ok := m.Fake.State(doomed); ok {
					return fmt.Errorf("doomed still defined")
				}
				if st, _ := m.Fake.State(kept); st != hypervisor.StateRunning {
					return fmt.Errorf("kept is %q", st)
				}
				return nil
			})
			if got := callsSince(m.Fake, calls, doomed); !slices.Equal(got, []string{"delete"}) {
				t.Fatalf("calls on the deleted VM after the restart: %v", got)
			}
		})
	}
}

// A service account created (and its token signed) through the leader is
// good at once on a follower whose replica lags: the follower catches up
// (within a bound) before it refuses a well-signed token of a subject it does
// not know.
func TestCatchUp_new_service_account_token_on_a_lagging_follower(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	f := c.Followers()[0]
	c.PartitionRaft(f)
	admin := c.Client(leader)
	if _, err := admin.CreateServiceAccount(kit.Ctx(t), kit.NS, "fresh"); err != nil {
		t.Fatal(err)
	}
	tok, err := admin.ServiceAccountToken(kit.Ctx(t), kit.NS, "fresh", api.TokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Peer.FSM().ServiceAccount(kit.NS, "fresh"); ok {
		t.Fatal("the follower was not lagging")
	}
	answer := make(chan int, 1)
	go func() {
		code, err := statusOf("http://"+f.Peer.APIAddr()+"/api/v1/namespaces/"+kit.NS+"/vms", tok.Token)
		if err != nil {
			t.Error(err) // not Fatal: the test waits on answer
		}
		answer <- code
	}()
	c.WaitFor("the follower to sync for the unknown subject", 5*time.Second, func() error {
		select {
		case code := <-answer:
			t.Fatalf("answered %d before the replica could catch up", code)
		default:
		}
		if kit.Metric(t, f, "svc_http_subject_syncs_total") < 1 {
			return fmt.Errorf("no sync yet")
		}
		return nil
	})
	c.Heal()
	select {
	case code := <-answer:
		if code != http.StatusOK {
			t.Fatalf("a fresh service account's token on a lagging follower: %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
}

func get(t *testing.T, url, token string) *http.Response {
	t.Helper()
	resp, err := getOnce(url, token)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// statusOf is get's status code, for a goroutine (which must not end its
// test).
func statusOf(url, token string) (int, error) {
	resp, err := getOnce(url, token)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// getOnce GETs url with token, waiting at most a minute, and closes the
// answer's body.
func getOnce(url, token string) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return resp, nil
}

// A leader crashes and comes back at once, over and over, on a quiet
// cluster: whichever peer then leads, the last entries of the log are the
// new term's no-op and barrier, which no replica's state records. The
// restarted peer still catches up, and a consistent read on the new leader
// is answered.
func TestCatchUp_restarted_leader_on_a_quiet_cluster(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	for round := range 4 {
		m := c.WaitLeader()
		c.Crash(m)
		c.Restart(m)
		c.WaitCaughtUp(m)
		// The restarted peer may still call an election: a read the leader
		// it was sent to no longer serves is answered 503 with Retry-After,
		// and a client following API.md sends it again to the new one.
		var leader *testcluster.Member
		if err := sendWrite(t, c, 0, func() error {
			leader = c.WaitLeader()
			_, err := c.Client(leader).ListNodes(kit.Ctx(t), kit.NS, true)
			return err
		}); err != nil {
			t.Fatalf("round %d: a consistent read on the new leader %s: %v", round, leader.Name, err)
		}
	}
}
