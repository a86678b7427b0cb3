package chaos

import (
	"math"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func op(key, verb, res string, call, ret int64) Op {
	if verb != Read && res == Unknown {
		ret = math.MaxInt64
	}
	return Op{Input: Input{Key: key, Verb: verb}, Result: res, Call: call, Return: ret}
}

func TestLinearizable_cases(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{name: "create then read it", ops: []Op{op("k", Create, OK, 0, 10), op("k", Read, Present, 20, 30)}, want: porcupine.Ok},
		{name: "a read misses an acknowledged create", ops: []Op{op("k", Create, OK, 0, 10), op("k", Read, Absent, 20, 30)}, want: porcupine.Illegal},
		{name: "a read concurrent with the create may miss it", ops: []Op{op("k", Create, OK, 0, 30), op("k", Read, Absent, 10, 20)}, want: porcupine.Ok},
		{name: "create of what exists must say exists", ops: []Op{op("k", Create, OK, 0, 10), op("k", Create, OK, 20, 30)}, want: porcupine.Illegal},
		{name: "exists after a create", ops: []Op{op("k", Create, OK, 0, 10), op("k", Create, Exists, 20, 30)}, want: porcupine.Ok},
		{name: "missing after a delete", ops: []Op{op("k", Create, OK, 0, 10), op("k", Delete, OK, 20, 30), op("k", Delete, Missing, 40, 50)}, want: porcupine.Ok},
		{name: "an unknown create may have happened", ops: []Op{op("k", Create, Unknown, 0, 0), op("k", Read, Present, 20, 30)}, want: porcupine.Ok},
		{name: "or not", ops: []Op{op("k", Create, Unknown, 0, 0), op("k", Read, Absent, 20, 30)}, want: porcupine.Ok},
		{name: "but not back and forth", ops: []Op{op("k", Create, Unknown, 0, 0), op("k", Read, Present, 20, 30), op("k", Read, Absent, 40, 50)}, want: porcupine.Illegal},
		{name: "keys are independent", ops: []Op{op("a", Create, OK, 0, 10), op("b", Read, Absent, 20, 30)}, want: porcupine.Ok},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, bad, err := linearizable(c.ops, time.Minute, "")
			if err != nil || got != c.want {
				t.Fatalf("got %s (bad keys %v, %v), want %s", got, bad, err, c.want)
			}
			if got == porcupine.Illegal && len(bad) == 0 {
				t.Fatal("a violation with no key named")
			}
		})
	}
}

func final(key, res string, at int64) Op {
	o := op(key, Read, res, at, at+5)
	o.Client = -1
	return o
}

func TestLost_cases(t *testing.T) {
	cases := []struct {
		name string
		ops  []Op
		want int
	}{
		{name: "kept", ops: []Op{op("k", Create, OK, 0, 10), final("k", Present, 100)}},
		{name: "lost create", ops: []Op{op("k", Create, OK, 0, 10), final("k", Absent, 100)}, want: 1},
		{name: "lost delete", ops: []Op{op("k", Create, OK, 0, 10), op("k", Delete, OK, 20, 30), final("k", Present, 100)}, want: 1},
		{name: "a later unknown write excuses it", ops: []Op{op("k", Create, OK, 0, 10), op("k", Delete, Unknown, 20, 0), final("k", Absent, 100)}},
		{name: "concurrent writes excuse it", ops: []Op{op("k", Create, OK, 0, 30), op("k", Delete, OK, 10, 20), final("k", Absent, 100)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, keys := lost(c.ops); got != c.want {
				t.Fatalf("lost %d %v, want %d", got, keys, c.want)
			}
		})
	}
}

func TestStale_cases(t *testing.T) {
	probe := func(seen bool) Probe {
		return Probe{Peer: 2, Restarted: 50, Call: 60, Return: 70, Tags: map[string]bool{"tag/peer-1/t-0": seen}}
	}
	tagged := op("tag/peer-1/t-0", Create, OK, 0, 10)
	cases := []struct {
		name  string
		ops   []Op
		probe Probe
		want  int
	}{
		{name: "serves what was acknowledged before the restart", ops: []Op{tagged}, probe: probe(true)},
		{name: "serves an older state", ops: []Op{tagged}, probe: probe(false), want: 1},
		{name: "a write after the restart may or may not show", ops: []Op{tagged, op("tag/peer-1/t-0", Delete, OK, 55, 58)}, probe: probe(true)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, keys := stale(c.ops, []Probe{c.probe}); got != c.want {
				t.Fatalf("stale %d %v, want %d", got, keys, c.want)
			}
		})
	}
}

func TestUnavailability_through_healthy_peers(t *testing.T) {
	s := int64(time.Second)
	w := func(peer int, ret int64) Op {
		o := op("k", Create, OK, ret-1, ret)
		o.Peer = peer
		return o
	}
	ops := []Op{w(1, 1*s), w(1, 2*s), w(2, 2*s+s/2), w(1, 5*s), w(1, 6*s), w(1, 7*s)}
	faults := []Fault{{Kind: FaultKill, Peer: 2, Start: 2 * s, End: 3 * s}}
	// Through peer 1 nothing answered from 2 s to 5 s; peer 2's answer in
	// between does not count: it is the faulted peer.
	got := unavailability(ops, faults, 4*time.Second, 7*s)
	if got[0] != 3*time.Second {
		t.Fatalf("unavailable for %s, want 3s", got[0])
	}
}
