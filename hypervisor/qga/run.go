package qga

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// The polls of a RunShort program's status: first soon (a short program
// ends within a few of them), then less often.
const (
	shortPollFirst = 5 * time.Millisecond
	shortPollMax   = 50 * time.Millisecond
)

// RunShort runs the program through the agent's guest-exec, its outputs
// captured by the agent, and polls its status until ctx ends
// (hypervisor.MaxShortRun when it sets no deadline).
func (a Agent) RunShort(ctx context.Context, c hypervisor.ExecCommand) (hypervisor.ExecResult, error) {
	ctx, cancel := bounded(ctx, hypervisor.MaxShortRun)
	defer cancel()
	if len(c.Argv) == 0 {
		return hypervisor.ExecResult{}, errors.New("run: no program")
	}
	if len(c.Stdin) > hypervisor.MaxShortStdin {
		return hypervisor.ExecResult{}, fmt.Errorf("run: stdin is %d bytes, more than %d", len(c.Stdin), hypervisor.MaxShortStdin)
	}
	limit := c.MaxOutput
	if limit <= 0 || limit > hypervisor.MaxShortOutput {
		limit = hypervisor.MaxShortOutput
	}
	args := map[string]any{"path": c.Argv[0], "arg": c.Argv[1:], "capture-output": true}
	if len(c.Stdin) > 0 {
		args["input-data"] = base64.StdEncoding.EncodeToString(c.Stdin)
	}
	var started struct {
		PID int `json:"pid"`
	}
	if err := a.Call(ctx, map[string]any{"execute": "guest-exec", "arguments": args}, &started); err != nil {
		return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: %w: %w", c.Argv[0], a.Name, hypervisor.ErrNotStarted, err)
	}
	if started.PID <= 0 {
		return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: the agent answered pid %d", c.Argv[0], a.Name, started.PID)
	}
	wait := shortPollFirst
	for {
		var st struct {
			Exited   bool   `json:"exited"`
			ExitCode int    `json:"exitcode"`
			Signal   int    `json:"signal"`
			Out      string `json:"out-data"`
			Err      string `json:"err-data"`
		}
		err := a.Call(ctx, map[string]any{"execute": "guest-exec-status", "arguments": map[string]int{"pid": started.PID}}, &st)
		if ctx.Err() != nil {
			a.killPID(started.PID)
			return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: %w", c.Argv[0], a.Name, hypervisor.ErrExecTimeout)
		}
		if err != nil {
			return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: %w", c.Argv[0], a.Name, err)
		}
		if st.Exited {
			code, err := exitCode(st.ExitCode, st.Signal)
			if err != nil {
				return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: %w", c.Argv[0], a.Name, err)
			}
			r := hypervisor.ExecResult{ExitCode: code}
			var werr error
			if r.StdoutTruncated, werr = writeCaptured(c.Stdout, st.Out, limit); werr == nil {
				r.StderrTruncated, werr = writeCaptured(c.Stderr, st.Err, limit)
			}
			if werr != nil {
				return r, fmt.Errorf("run %q in %s: its output: %w", c.Argv[0], a.Name, werr)
			}
			return r, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(2*wait, shortPollMax)
	}
}

// exitCode is a program's status as a shell says it (128 plus a signal
// that killed it), from what the agent reported: an exit code of 0 to 255
// or a signal of 1 to 127, else an error.
func exitCode(code, signal int) (int, error) {
	switch {
	case signal > 0 && signal < 128:
		return 128 + signal, nil
	case signal == 0 && code >= 0 && code <= 255:
		return code, nil
	}
	return 0, fmt.Errorf("the agent reported exit code %d and signal %d", code, signal)
}

// bounded is ctx with a deadline of d from now when it sets none.
func bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// writeCaptured writes an output the agent captured (base64) to w, cut at
// limit bytes; it reports whether it cut.
func writeCaptured(w io.Writer, b64 string, limit int64) (bool, error) {
	b, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return false, err
	}
	cut := int64(len(b)) > limit
	if cut {
		b = b[:limit]
	}
	if w != nil {
		_, err = w.Write(b)
	}
	return cut, err
}

// killPID kills a RunShort program that ran out of time.
func (a Agent) killPID(pid int) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	if err := a.run(ctx, "kill", "-KILL", strconv.Itoa(pid)); err != nil {
		a.log().Warn("could not kill a guest program that ran out of time", "domain", a.Name, "pid", pid, "err", err)
	}
}
