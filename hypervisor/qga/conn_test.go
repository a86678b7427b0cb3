package qga

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/qgatest"
)

func dialAgent(t *testing.T) *Conn {
	t.Helper()
	c, err := net.Dial("unix", qgatest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	conn := NewConn(c)
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Against QEMU's own agent: a command's return decoded; an agent error
// returned as one; an answer left on the stream by a command given up on
// is skipped at the next sync, never taken for the next command's.
func TestConn_with_qemu_ga(t *testing.T) {
	c := dialAgent(t)
	var info struct {
		Version string `json:"version"`
	}
	if err := c.Call(ctxT(t), map[string]string{"execute": "guest-info"}, &info); err != nil || info.Version == "" {
		t.Fatalf("guest-info: %+v %v", info, err)
	}
	err := c.Call(ctxT(t), map[string]string{"execute": "guest-set-time"}, nil)
	var ae *Error
	if !errors.As(err, &ae) || ae.Class == "" {
		t.Fatalf("a disabled command: %v, want the agent's error", err)
	}
	// A command whose answer nobody read, then a failure (which makes the
	// next call sync again).
	if _, err := c.c.Write([]byte(`{"execute":"guest-get-host-name"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	c.synced = false
	var pid struct {
		PID int `json:"pid"`
	}
	if err := c.Call(ctxT(t), map[string]any{"execute": "guest-exec", "arguments": map[string]any{"path": "true"}}, &pid); err != nil || pid.PID == 0 {
		t.Fatalf("guest-exec after an unread answer: %+v %v", pid, err)
	}
}

// Nothing at the other end of the port answers: ErrNoAnswer within the
// caller's deadline.
func TestConn_no_agent(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	go func() { _, _ = b.Read(make([]byte, 4096)) }() // takes the sync, answers nothing
	c := NewConn(a)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Call(ctx, map[string]string{"execute": "guest-ping"}, nil)
	if !errors.Is(err, ErrNoAnswer) || time.Since(start) > 5*time.Second {
		t.Fatalf("%v after %v, want ErrNoAnswer at the deadline", err, time.Since(start))
	}
}
