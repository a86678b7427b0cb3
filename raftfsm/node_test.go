package raftfsm

import (
	"testing"
	"time"

	"github.com/svc-project/svc/api"
)

func TestFSM_NodeReady(t *testing.T) {
	f := NewFSM(nil)
	applyAll(t, f, initCmd(t), upsertCmd(t, "n1"), upsertCmd(t, "n2"),
		mustEncode(t, TypeNodeSetPhase, NodeSetPhase{Name: "n1", Phase: api.PhaseReady, Time: t0.Add(time.Minute)}),
		mustEncode(t, TypeNodeSetPhase, NodeSetPhase{Name: "n2", Phase: api.PhaseNotReady, Reason: "gossip: dead", Time: t0.Add(time.Minute)}))
	cases := []struct {
		node         string
		ready, known bool
	}{{"n1", true, true}, {"n2", false, true}, {"gone", false, false}}
	for _, c := range cases {
		if ready, known := f.NodeReady(c.node); ready != c.ready || known != c.known {
			t.Errorf("NodeReady(%s) = %v, %v; want %v, %v", c.node, ready, known, c.ready, c.known)
		}
		if n, ok := f.Node(c.node); ok && n.Ready() != c.ready {
			t.Errorf("%s: Node.Ready = %v", c.node, n.Ready())
		}
	}
}
