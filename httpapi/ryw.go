package httpapi

import (
	"context"
	"sync"
	"time"

	"github.com/svc-project/svc/raftfsm"
)

// Read-your-writes without holding up the write: a write forwarded to the
// leader is answered as soon as the leader has applied it. The follower
// notes, per token, the leader's index of that token's last write, and the
// token's next request here waits (a bounded time) until the local replica
// has applied it. A follower learns the commit index only with the leader's
// next append or heartbeat, so waiting on every forwarded write would cost
// every write up to a heartbeat interval; this costs only a read that comes
// right after a write, by the same caller.
type pendingWrites struct {
	mu sync.Mutex
	m  map[string]uint64 // Authorization header -> leader index of its last write
}

// maxPendingTokens bounds the tokens remembered; beyond it, those already
// applied go first, then any (their reads may then miss a write of the last
// few milliseconds).
const maxPendingTokens = 16384

func newPendingWrites() *pendingWrites { return &pendingWrites{m: map[string]uint64{}} }

// note records that token's write reached the leader at index.
func (p *pendingWrites) note(token string, index uint64, fsm *raftfsm.FSM) {
	if token == "" || index <= fsm.Index() {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.m) >= maxPendingTokens {
		applied := fsm.Index()
		for t, i := range p.m {
			if i <= applied || len(p.m) >= maxPendingTokens {
				delete(p.m, t)
			}
		}
	}
	if index > p.m[token] {
		p.m[token] = index
	}
}

// await waits until the replica has applied token's last noted write, at
// most readYourWrites.
func (p *pendingWrites) await(ctx context.Context, token string, fsm *raftfsm.FSM) error {
	p.mu.Lock()
	index, ok := p.m[token]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	if fsm.Index() < index {
		ctx, cancel := context.WithTimeout(ctx, readYourWrites)
		defer cancel()
		if err := fsm.WaitIndex(ctx, index); err != nil {
			return err
		}
	}
	p.mu.Lock()
	if p.m[token] <= index {
		delete(p.m, token)
	}
	p.mu.Unlock()
	return nil
}

// readYourWrites bounds the wait for the local replica to catch up with a
// caller's forwarded write.
const readYourWrites = 5 * time.Second
