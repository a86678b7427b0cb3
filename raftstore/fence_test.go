package raftstore

import (
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func tcpTransport(t *testing.T) *raft.NetworkTransport {
	t.Helper()
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// heartbeat is what raft's fast path takes for a heartbeat.
func heartbeat() *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte("leader")}, Term: 3}
}

// The fence waits for a heartbeat raft is handling, and turns away those
// that come after it.
func TestFencedTransport_fence(t *testing.T) {
	server := &fencedTransport{NetworkTransport: tcpTransport(t)}
	entered, release := make(chan struct{}), make(chan struct{})
	var handled atomic.Int32
	server.SetHeartbeatHandler(func(rpc raft.RPC) {
		handled.Add(1)
		if handled.Load() == 1 {
			close(entered)
			<-release
		}
		rpc.Respond(&raft.AppendEntriesResponse{Term: 3, Success: true}, nil)
	})
	client := tcpTransport(t)
	sent := make(chan error, 1)
	go func() {
		sent <- client.AppendEntries("server", server.LocalAddr(), heartbeat(), &raft.AppendEntriesResponse{})
	}()
	<-entered
	fenced := make(chan struct{})
	go func() { server.fence(); close(fenced) }()
	select {
	case <-fenced:
		t.Fatal("the fence went up while a heartbeat was being handled")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-fenced
	if err := <-sent; err != nil {
		t.Fatalf("the heartbeat in flight: %v", err)
	}
	err := client.AppendEntries("server", server.LocalAddr(), heartbeat(), &raft.AppendEntriesResponse{})
	if err == nil || !strings.Contains(err.Error(), raft.ErrTransportShutdown.Error()) {
		t.Fatalf("a heartbeat after the fence: %v", err)
	}
	if handled.Load() != 1 {
		t.Fatalf("raft handled %d heartbeats", handled.Load())
	}
}
