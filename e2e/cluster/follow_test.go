package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/node/follow"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/testcluster"
)

// A host outside the Raft group follows the log through a member's feed
// over the fabric (with a peer's certificate: nobody else may read it),
// holds exactly the members' state as writes go on, and when the member it
// reads from stops, goes on through another.
func TestFollow_a_host_keeps_the_state_through_a_members_feed(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	var source, other, via *testcluster.Member // read from a follower; the fabric's client is the third member's
	for _, m := range c.Followers() {
		if source == nil {
			source = m
		} else {
			other = m
		}
	}
	via = leader
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// nobody but a peer reads the log
	resp, err := http.Get("http://" + source.Peer.APIAddr() + follow.LogPath + "?from=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the log read without a peer's certificate: %d", resp.StatusCode)
	}

	fsm := raftfsm.NewFSM(nil)
	f := &follow.Follower{
		FSM:     fsm,
		Sources: func() []string { return []string{via.Peer.Links().URL(source.Name), via.Peer.Links().URL(other.Name)} },
		HTTP:    &http.Client{Transport: via.Peer.Links().PeerTransport()},
		Wait:    time.Second,
	}
	fctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = f.Run(fctx) }()
	defer func() { stop(); <-done }()

	cl := c.Client(leader)
	tag := func(i int) {
		t.Helper()
		if _, err := cl.TagNode(ctx, kit.NS, leader.Name, fmt.Sprintf("t%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// holds waits until the following host holds m's state, m the leader:
	// a member it reads from may lag the leader's acknowledged writes
	holds := func(m *testcluster.Member) {
		t.Helper()
		c.WaitFor("the following host to hold "+m.Name+"'s state", 30*time.Second, func() error {
			want, err := m.Peer.FSM().Dump()
			if err != nil {
				return err
			}
			got, err := fsm.Dump()
			if err != nil {
				return err
			}
			if fsm.Index() != m.Peer.FSM().Index() || !bytes.Equal(got, want) {
				return fmt.Errorf("following at %d, %s at %d", fsm.Index(), m.Name, m.Peer.FSM().Index())
			}
			return nil
		})
	}
	for i := range 5 {
		tag(i)
	}
	holds(leader)
	// it reads from either (one may have refused it as it started: a peer
	// serves its log once it knows its place in the group)
	c.WaitFor("the follower to know the leader from its source", 10*time.Second, func() error {
		if st := f.Status(); st.Leader != leader.Name {
			return fmt.Errorf("the follower's status %+v: want %s as leader", st, leader.Name)
		}
		return nil
	})
	if f.Status().Source == via.Peer.Links().URL(other.Name) {
		source, other = other, source
	}
	if n, ok := fsm.Node(leader.Name); !ok || len(n.Tags) < 5 {
		t.Fatalf("the followed state's node %s: %+v", leader.Name, n)
	}

	c.Stop(source)
	for i := 5; i < 10; i++ {
		tag(i)
	}
	holds(leader)
	if st := f.Status(); st.Source != via.Peer.Links().URL(other.Name) {
		t.Fatalf("after %s stopped the follower reads from %q", source.Name, st.Source)
	}
	if _, err := cl.ListVMs(ctx, api.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
}
