package raftstore

import (
	"sync"

	"github.com/hashicorp/raft"
)

// fencedTransport is raft's network transport with a fence before the
// heartbeat fast path. The transport hands a heartbeat to raft on the
// connection's own goroutine, not raft's: a heartbeat that passed raft's
// shutdown check just before Close could still be writing the term to the
// log store when Close closed it, and raft panics on a failed write of its
// term ("failed to save current term: database not open", seen in a test
// that stopped a peer). Close raises the fence after raft's shutdown: it
// waits for the heartbeats in flight, and refuses those after, before the
// log store closes.
type fencedTransport struct {
	*raft.NetworkTransport
	mu     sync.RWMutex
	fenced bool
}

// SetHeartbeatHandler hands raft's handler to the transport behind the
// fence.
func (t *fencedTransport) SetHeartbeatHandler(cb func(rpc raft.RPC)) {
	if cb == nil {
		t.NetworkTransport.SetHeartbeatHandler(nil)
		return
	}
	t.NetworkTransport.SetHeartbeatHandler(func(rpc raft.RPC) {
		t.mu.RLock()
		defer t.mu.RUnlock()
		if t.fenced {
			rpc.Respond(nil, raft.ErrTransportShutdown)
			return
		}
		cb(rpc)
	})
}

// fence waits for the heartbeats raft is handling and turns away the rest.
func (t *fencedTransport) fence() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.fenced = true
}
