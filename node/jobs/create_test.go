package jobs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/fsmtest"
)

// lossy fails its first n proposals as a leader that lost its leadership
// while committing them, having applied them anyway.
type lossy struct {
	*fsmtest.Applier
	n, calls int
}

func (l *lossy) Apply(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	l.calls++
	v, err := l.Applier.Apply(ctx, t, body)
	if err == nil && l.calls <= l.n {
		return nil, raftfsm.NewRuleError(raftfsm.ErrNotLeader, "leadership lost while committing log")
	}
	return v, err
}

// A pull's record whose fate is unknown is sent again, and applied twice
// is one record; a record of another kind is not sent again.
func TestManager_createImage_fate_unknown(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fromRegistry bool
		losses       int
		calls        int
		ok           bool
	}{
		{"a pull's record, lost twice", true, 2, 3, true},
		{"a pull's record, lost every time", true, 99, createAttempts, false},
		{"another record", false, 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := fsmtest.New()
			a.Must(t, raftfsm.TypeInit, raftfsm.TestInit("c", time.Now().UTC()))
			p := &lossy{Applier: a, n: tc.losses}
			m := New(Config{Name: "up", FSM: a.FSM, Proposer: p})
			img := raftfsm.Image{Name: "tiny", Namespace: api.DefaultNamespace, Digest: "sha256:aa", Format: "raw",
				SourceType: raftfsm.SourceRemote, Source: "r.test/os:tiny@sha256:01"}
			_, err := m.createImage(context.Background(), raftfsm.ImageCreate{Image: img, Holder: "up", FromRegistry: tc.fromRegistry, Proof: raftfsm.ProofReceived})
			if (err == nil) != tc.ok || p.calls != tc.calls {
				t.Fatalf("err %v after %d proposals, want ok %v after %d", err, p.calls, tc.ok, tc.calls)
			}
			if err != nil && !errors.Is(err, raftfsm.ErrNotLeader) {
				t.Fatalf("err %v", err)
			}
			if got, ok := a.FSM.Image(api.DefaultNamespace, "tiny"); !ok || got.Digest != img.Digest {
				t.Fatalf("the record: %+v %v", got, ok)
			}
		})
	}
}
