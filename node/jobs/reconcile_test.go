package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/fsmtest"
)

// The leader's job reconciliation, alone: a state fed commands, the manager
// proposing through a one-peer stand-in. An unended job whose peer is NOT
// READY fails, naming it; a cache job fails only its lost node's copy;
// ended jobs are forgotten after jobRetention, not before.
func TestReconcileJobs(t *testing.T) {
	a := fsmtest.New()
	now := time.Now().UTC().Truncate(time.Second)
	a.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c", now.Add(-24*time.Hour)))
	for _, n := range []string{"up", "down"} {
		a.Must(t, raftfsm.TypeNodeUpsert, raftfsm.NodeUpsert{Name: n, Phase: api.PhaseReady, NodeFacts: raftfsm.NodeFacts{
			Addr: "10.0.0.1", Capacity: raftfsm.Capacity{CPU: 4, MemoryBytes: 8 << 30}}})
	}
	ns := api.DefaultNamespace
	a.Must(t, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: raftfsm.Image{Name: "mini", Namespace: ns, Digest: "sha256:aa", Format: "qcow2"}, Holder: "up"})
	job := func(name, node string, targets ...string) {
		j := raftfsm.Job{Name: name, Namespace: ns, Type: raftfsm.JobPull, Node: node, Reference: "r/x:1", StartTime: now}
		if node == "" {
			j.Type, j.Image = raftfsm.JobCache, "mini"
			for _, n := range targets {
				j.Targets = append(j.Targets, raftfsm.JobTarget{Node: n})
			}
		}
		a.Must(t, raftfsm.TypeJobCreate, raftfsm.JobCreate{Job: j})
	}
	end := func(name string, at time.Time) {
		a.Must(t, raftfsm.TypeJobUpdate, raftfsm.JobUpdate{Namespace: ns, Name: name, State: raftfsm.JobSucceeded, Time: at})
	}
	job("on-up", "up")
	job("on-down", "down")
	job("cache", "", "up", "down")
	job("ended-long-ago", "up")
	end("ended-long-ago", now.Add(-2*jobRetention))
	job("ended-lately", "up")
	end("ended-lately", now.Add(-time.Minute))
	a.Must(t, raftfsm.TypeNodeSetPhase, raftfsm.NodeSetPhase{Name: "down", Phase: api.PhaseNotReady, Time: now})

	m := New(Config{Name: "up", FSM: a.FSM, Proposer: a})
	if err := m.ReconcileJobs(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, state, message string
		gone                 bool
		// targets: each cache target's state by node
		targets map[string]string
	}{
		{name: "on-up", state: raftfsm.JobPending},
		{name: "on-down", state: raftfsm.JobFailed, message: "peer down, which carried the job out, is NOT READY"},
		{name: "cache", targets: map[string]string{"up": raftfsm.JobPending, "down": raftfsm.JobFailed}},
		{name: "ended-long-ago", gone: true},
		{name: "ended-lately", state: raftfsm.JobSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, ok := a.FSM.Job(ns, tt.name)
			if ok == tt.gone {
				t.Fatalf("job there: %v, want gone: %v", ok, tt.gone)
			}
			if tt.gone {
				return
			}
			if tt.state != "" && j.State != tt.state || !strings.Contains(j.Message, tt.message) {
				t.Fatalf("job %s %q, want %s %q", j.State, j.Message, tt.state, tt.message)
			}
			for _, tg := range j.Targets {
				if want := tt.targets[tg.Node]; tg.State != want {
					t.Errorf("target %s %s (%q), want %s", tg.Node, tg.State, tg.Message, want)
				}
			}
		})
	}
	// Nothing more to do: a second pass changes nothing and fails nothing.
	before := a.FSM.Index()
	if err := m.ReconcileJobs(context.Background()); err != nil || a.FSM.Index() != before {
		t.Fatalf("second pass: %v, index %d -> %d", err, before, a.FSM.Index())
	}
}
