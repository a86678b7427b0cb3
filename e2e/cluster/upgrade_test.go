package cluster

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// TestUpgrade_a_peer_that_meets_an_unknown_command_stops_applying: a
// command of a newer svc reaching peers that do not know it (here every
// peer: the entry's type is no svc's) stops their replicas where they are,
// says so in the log, cluster-info and every authenticated answer, and a
// restarted peer stops at the same entry again: nothing applied wrongly,
// nothing skipped.
func TestUpgrade_a_peer_that_meets_an_unknown_command_stops_applying(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{Prefix: "halt"})
	leader := c.WaitLeader()
	if _, err := leader.Peer.Store().Apply(kit.Ctx(t), []byte{0x7e, '{', '}'}); !errors.Is(err, raftfsm.ErrHalted) {
		t.Fatalf("the leader applied a command of no svc: %v", err)
	}
	var at uint64
	for _, m := range c.Running() {
		c.WaitFor(m.Name+" halted", 10*time.Second, func() error {
			h, ok := m.Peer.FSM().Halted()
			if !ok {
				return errors.New("still applying")
			}
			if at != 0 && h.Index != at {
				return fmt.Errorf("halted at %d, another peer at %d", h.Index, at)
			}
			at = h.Index
			return nil
		})
		info, err := c.Client(m).ClusterInfo(kit.Ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info.Halted, "upgrade this peer") || info.Level != raftfsm.Level {
			t.Fatalf("%s's cluster-info: halted %q level %d", m.Name, info.Halted, info.Level)
		}
		_, err = c.Client(m).ListNamespaces(kit.Ctx(t))
		if se := statusErr(err); se == nil || se.Status.Code != http.StatusServiceUnavailable || !strings.Contains(se.Status.Message, "stopped applying") {
			t.Fatalf("%s answered an authenticated call: %v", m.Name, err)
		}
	}
	f := c.Followers()[0]
	index := f.Peer.FSM().Index()
	c.Stop(f)
	c.Restart(f)
	c.WaitFor(f.Name+" halted again at the same entry", 20*time.Second, func() error {
		h, ok := f.Peer.FSM().Halted()
		if !ok || h.Index != at {
			return fmt.Errorf("halted %v at %d", ok, h.Index)
		}
		return nil
	})
	if got := f.Peer.FSM().Index(); got != index {
		t.Fatalf("restarted replica at index %d, was %d", got, index)
	}
}
