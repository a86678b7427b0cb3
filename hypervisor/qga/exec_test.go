package qga

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/qgatest"
)

// agentOf is an Agent over streams to QEMU's own agent on this host.
func agentOf(t *testing.T) Agent {
	t.Helper()
	sock := qgatest.Start(t)
	r := &Redial{Dial: func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	t.Cleanup(func() { r.Close() })
	return Agent{Name: "qemu-ga", Call: r.Call, Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
}

// Programs through QEMU's own agent, streamed (Exec) and short (RunShort):
// outputs, exit status, stdin (one call's worth and more), an output cut at
// its bound, a program past its deadline killed; what the guest is.
func TestAgent_with_qemu_ga(t *testing.T) {
	a := agentOf(t)
	bigIn := bytes.Repeat([]byte("0123456789abcdef"), hypervisor.MaxShortStdin/16+64)
	for _, tc := range []struct {
		name       string
		short      bool
		c          hypervisor.ExecCommand
		out, err   string
		code       int
		outCut     bool
		wantLenOut int
	}{
		{name: "exec: outputs and status", c: hypervisor.ExecCommand{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}}, out: "out\n", err: "err\n", code: 3},
		{name: "exec: stdin", c: hypervisor.ExecCommand{Argv: []string{"cat"}, Stdin: []byte("given\n")}, out: "given\n"},
		{name: "exec: a stdin over one call", c: hypervisor.ExecCommand{Argv: []string{"wc", "-c"}, Stdin: bigIn}, out: strconv.Itoa(len(bigIn)) + "\n"},
		{name: "exec: an output cut at its bound", c: hypervisor.ExecCommand{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero"}, MaxOutput: 1000}, outCut: true, wantLenOut: 1000},
		{name: "short: outputs and status", short: true, c: hypervisor.ExecCommand{Argv: []string{"sh", "-c", "echo out; echo err >&2; exit 4"}}, out: "out\n", err: "err\n", code: 4},
		{name: "short: stdin", short: true, c: hypervisor.ExecCommand{Argv: []string{"cat"}, Stdin: []byte("given\n")}, out: "given\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			tc.c.Stdout, tc.c.Stderr = &stdout, &stderr
			run := a.Exec
			if tc.short {
				run = a.RunShort
			}
			r, err := run(ctxT(t), tc.c)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != tc.code || r.StdoutTruncated != tc.outCut {
				t.Fatalf("result %+v, want exit %d, cut %v", r, tc.code, tc.outCut)
			}
			if tc.wantLenOut > 0 {
				if stdout.Len() != tc.wantLenOut {
					t.Fatalf("%d bytes of output, want %d", stdout.Len(), tc.wantLenOut)
				}
				return
			}
			if stdout.String() != tc.out || stderr.String() != tc.err {
				t.Fatalf("stdout %q stderr %q, want %q %q", stdout.String(), stderr.String(), tc.out, tc.err)
			}
		})
	}
	t.Run("exec: past its deadline, killed", func(t *testing.T) {
		mark := filepath.Join(t.TempDir(), "pid")
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := a.Exec(ctx, hypervisor.ExecCommand{Argv: []string{"sh", "-c", "echo $$ >" + mark + "; exec sleep 60"}})
		if !errors.Is(err, hypervisor.ErrExecTimeout) {
			t.Fatalf("%v, want ErrExecTimeout", err)
		}
		b, err := os.ReadFile(mark)
		if err != nil {
			t.Fatal(err)
		}
		proc := "/proc/" + strings.TrimSpace(string(b))
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			st, err := os.ReadFile(proc + "/stat")
			if err != nil || strings.Contains(string(st), ") Z ") {
				break // gone, or a zombie: killed
			}
			if time.Now().After(deadline) {
				t.Fatalf("the program (%s) runs on past its deadline", proc)
			}
		}
	})
	info, err := a.Info(ctxT(t))
	if err != nil || info.OS == "" {
		t.Fatalf("info: %+v %v", info, err)
	}
}

// A port nobody listens on is no agent.
func TestAgent_no_agent(t *testing.T) {
	a, b := net.Pipe()
	b.Close()
	c := NewConn(a)
	defer c.Close()
	_, err := Agent{Name: "none", Call: c.Call}.RunShort(ctxT(t), hypervisor.ExecCommand{Argv: []string{"true"}})
	if !errors.Is(err, hypervisor.ErrNoAgent) {
		t.Fatalf("%v, want ErrNoAgent", err)
	}
}
