package fsmtest

import (
	"context"
	"sync"
	"testing"

	"github.com/svc-project/svc/raftfsm"
)

// Applier applies commands to FSM, one log index after another.
type Applier struct {
	FSM *raftfsm.FSM
	mu  sync.Mutex
	idx uint64
}

// New returns an applier over an empty state.
func New() *Applier { return &Applier{FSM: raftfsm.NewFSM(nil)} }

// Apply encodes, decodes and applies one command, and returns its result.
func (a *Applier) Apply(_ context.Context, t raftfsm.Type, body any) (any, error) {
	b, err := raftfsm.Encode(t, body)
	if err != nil {
		return nil, err
	}
	c, err := raftfsm.Decode(b)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.idx++
	res := a.FSM.ApplyCommand(a.idx, c)
	return res.Value, res.Err
}

// ApplyCommand is Apply under the name the leader's Raft has.
func (a *Applier) ApplyCommand(ctx context.Context, t raftfsm.Type, body any) (any, error) {
	return a.Apply(ctx, t, body)
}

// Must applies a command and fails the test when it is refused.
func (a *Applier) Must(tb testing.TB, t raftfsm.Type, body any) {
	tb.Helper()
	if _, err := a.Apply(context.Background(), t, body); err != nil {
		tb.Fatalf("%s: %v", t, err)
	}
}
