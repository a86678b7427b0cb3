package qga

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// Agent is what is done with one guest through its agent: Call sends one
// command (an object of "execute" and "arguments") and decodes the
// "return" of its answer into out; an agent that does not answer is an
// error wrapping hypervisor.ErrNoAgent.
type Agent struct {
	Name string
	Call func(ctx context.Context, cmd, out any) error
	Log  *slog.Logger
}

func (a Agent) log() *slog.Logger {
	if a.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return a.Log
}

// execPoll is how often a running guest program's outputs are read.
const execPoll = 100 * time.Millisecond

// execScript runs a guest program for Exec under the guest's POSIX shell
// (QEMU's agent returns captured output only whole, at the end, and
// libvirt drops an agent answer over 10 MiB and the agent with it): the
// program's stdout and stderr go to files in a directory of its own, each
// written as it comes (cat, not head -c: head's output is buffered, so a
// short output showed only when the program ended) and cut by the shell's
// file-size limit at about its bound ($2 bytes, the bound plus one, so
// that a cut shows; the host passes on no more than the bound), the rest
// drained so that the program runs on; its pid and exit status go there
// too. The host reads the files as they grow and removes the directory.
// A stdin larger than one agent call carries well (MaxShortStdin) is
// written to a guest file first ($3), which the script reads and removes.
const execScript = `d=$1 n=$2 in=$3; shift 3
mkdir -m 700 "$d" || exit 125
if [ -n "$in" ]; then exec 4<"$in" && rm -f "$in" || exit 125; else exec 4<&0; fi
k=$(( (n + 511) / 512 ))
{ { "$@" <&4 4<&- 2>&1 1>&3 3>&- & echo $! >"$d/pid"; wait $!; echo $? >"$d/rc"; } | { (ulimit -f "$k"; trap '' XFSZ; exec cat >"$d/err" 2>/dev/null); cat >/dev/null; }; } 3>&1 | { (ulimit -f "$k"; trap '' XFSZ; exec cat >"$d/out" 2>/dev/null); cat >/dev/null; }`

// Exec runs a program in the guest through its agent and its shell
// (execScript), streaming its outputs as they grow, until ctx ends
// (hypervisor.MaxExecRun when it sets no deadline).
func (a Agent) Exec(ctx context.Context, c hypervisor.ExecCommand) (hypervisor.ExecResult, error) {
	ctx, cancel := bounded(ctx, hypervisor.MaxExecRun)
	defer cancel()
	if len(c.Argv) == 0 {
		return hypervisor.ExecResult{}, errors.New("exec: no program")
	}
	if len(c.Stdin) > hypervisor.MaxExecStdin {
		return hypervisor.ExecResult{}, fmt.Errorf("exec: stdin is %d bytes, more than %d", len(c.Stdin), hypervisor.MaxExecStdin)
	}
	max := c.MaxOutput
	if max <= 0 {
		max = hypervisor.MaxExecOutput
	}
	dir := "/tmp/svc-run." + randomHex(8)
	stdin, in := c.Stdin, ""
	if len(stdin) > hypervisor.MaxShortStdin {
		in, stdin = dir+".in", nil
	}
	defer a.cleanup(dir)
	if in != "" {
		if err := a.writeFile(ctx, in, c.Stdin); err != nil {
			return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: its stdin: %w: %w", c.Argv[0], a.Name, hypervisor.ErrNotStarted, err)
		}
	}
	argv := append([]string{"-c", execScript, "sh", dir, strconv.FormatInt(max+1, 10), in}, c.Argv...)
	pid, err := a.start(ctx, "sh", argv, stdin)
	if err != nil {
		return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: %w: %w", c.Argv[0], a.Name, hypervisor.ErrNotStarted, err)
	}
	out := &guestStream{path: dir + "/out", w: c.Stdout, max: max}
	errs := &guestStream{path: dir + "/err", w: c.Stderr, max: max}
	tick := time.NewTicker(execPoll)
	defer tick.Stop()
	for {
		exited, _, err := a.status(ctx, pid)
		if err == nil {
			// Read after the status: an exited program's files are whole.
			if err = out.poll(ctx, a); err == nil {
				err = errs.poll(ctx, a)
			}
		}
		if ctx.Err() != nil {
			a.killProgram(dir)
			return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: %w", c.Argv[0], a.Name, hypervisor.ErrExecTimeout)
		}
		if err != nil {
			return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: %w", c.Argv[0], a.Name, err)
		}
		if exited {
			rc, err := a.readFile(ctx, dir+"/rc", 0, 16)
			code, perr := strconv.Atoi(strings.TrimSpace(string(rc)))
			if perr == nil && (code < 0 || code > 255) {
				perr = fmt.Errorf("exit status %d", code)
			}
			if err != nil || perr != nil {
				return hypervisor.ExecResult{}, fmt.Errorf("run %q in %s: the guest's shell did not run it (it needs a POSIX shell and a writable /tmp): %v", c.Argv[0], a.Name, err)
			}
			return hypervisor.ExecResult{ExitCode: code, StdoutTruncated: out.cut, StderrTruncated: errs.cut}, nil
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// guestStream follows one output file of a guest program.
type guestStream struct {
	path string
	w    io.Writer
	max  int64
	off  int64
	cut  bool
}

// poll copies what the file gained since the last poll, up to the bound.
func (s *guestStream) poll(ctx context.Context, a Agent) error {
	for {
		b, err := a.readFile(ctx, s.path, s.off, guestReadChunk)
		if errors.Is(err, errGuestNoFile) {
			return nil // not made yet
		}
		if err != nil {
			return err
		}
		if len(b) == 0 {
			return nil
		}
		keep := b
		if s.off+int64(len(b)) > s.max {
			keep = b[:max(0, s.max-s.off)]
			s.cut = true
		}
		s.off += int64(len(b))
		if s.w != nil && len(keep) > 0 {
			if _, err := s.w.Write(keep); err != nil {
				return fmt.Errorf("pass on the output: %w", err)
			}
		}
		if len(b) < guestReadChunk {
			return nil
		}
	}
}

// guestReadChunk is the most one agent call reads (its answer, in base64,
// stays well under libvirt's 10 MiB).
const guestReadChunk = 1 << 20

var errGuestNoFile = errors.New("no such file in the guest")

// readFile reads up to n bytes of a guest file from off.
func (a Agent) readFile(ctx context.Context, path string, off int64, n int) ([]byte, error) {
	var h int
	if err := a.Call(ctx, map[string]any{"execute": "guest-file-open", "arguments": map[string]string{"path": path, "mode": "r"}}, &h); err != nil {
		if strings.Contains(err.Error(), "No such file") {
			return nil, errGuestNoFile
		}
		return nil, err
	}
	if h < 0 {
		return nil, fmt.Errorf("the agent of %s answered handle %d", a.Name, h)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
		defer cancel()
		_ = a.Call(cctx, map[string]any{"execute": "guest-file-close", "arguments": map[string]int{"handle": h}}, nil)
	}()
	if off > 0 {
		var pos struct{}
		if err := a.Call(ctx, map[string]any{"execute": "guest-file-seek", "arguments": map[string]any{"handle": h, "offset": off, "whence": "set"}}, &pos); err != nil {
			return nil, err
		}
	}
	var r struct {
		Count int    `json:"count"`
		Buf   string `json:"buf-b64"`
	}
	if err := a.Call(ctx, map[string]any{"execute": "guest-file-read", "arguments": map[string]int{"handle": h, "count": n}}, &r); err != nil {
		return nil, err
	}
	if len(r.Buf) > base64.StdEncoding.EncodedLen(n) {
		return nil, fmt.Errorf("the agent of %s sent %d bytes of base64 for a read of %d bytes of %s", a.Name, len(r.Buf), n, path)
	}
	b, err := base64.StdEncoding.DecodeString(r.Buf)
	if err != nil {
		return nil, fmt.Errorf("the agent of %s sent a read of %s that is no base64: %w", a.Name, path, err)
	}
	if r.Count != len(b) {
		return nil, fmt.Errorf("the agent of %s says it read %d bytes of %s and sent %d", a.Name, r.Count, path, len(b))
	}
	return b, nil
}

// guestWriteChunk is how much of a file one guest-file-write carries.
const guestWriteChunk = 48 << 10

// writeFile writes data to a new guest file (the agent's user's alone),
// a chunk per agent call.
func (a Agent) writeFile(ctx context.Context, path string, data []byte) error {
	var h int
	if err := a.Call(ctx, map[string]any{"execute": "guest-file-open", "arguments": map[string]string{"path": path, "mode": "w"}}, &h); err != nil {
		return err
	}
	if h < 0 {
		return fmt.Errorf("the agent of %s answered handle %d", a.Name, h)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
		defer cancel()
		_ = a.Call(cctx, map[string]any{"execute": "guest-file-close", "arguments": map[string]int{"handle": h}}, nil)
	}()
	for len(data) > 0 {
		n := min(len(data), guestWriteChunk)
		var w struct {
			Count int `json:"count"`
		}
		args := map[string]any{"handle": h, "buf-b64": base64.StdEncoding.EncodeToString(data[:n])}
		if err := a.Call(ctx, map[string]any{"execute": "guest-file-write", "arguments": args}, &w); err != nil {
			return err
		}
		if w.Count <= 0 || w.Count > n {
			return fmt.Errorf("the agent of %s says it wrote %d bytes of the %d sent to %s", a.Name, w.Count, n, path)
		}
		data = data[w.Count:]
	}
	return nil
}

// start starts a program through the agent (guest-exec) and returns its
// pid.
func (a Agent) start(ctx context.Context, path string, args []string, stdin []byte) (int, error) {
	args2 := map[string]any{"path": path, "arg": args}
	if len(stdin) > 0 {
		args2["input-data"] = base64.StdEncoding.EncodeToString(stdin)
	}
	var started struct {
		PID int `json:"pid"`
	}
	err := a.Call(ctx, map[string]any{"execute": "guest-exec", "arguments": args2}, &started)
	if err == nil && started.PID <= 0 {
		err = fmt.Errorf("the agent of %s answered pid %d", a.Name, started.PID)
	}
	return started.PID, err
}

// status asks whether a program started by start ended, and how.
func (a Agent) status(ctx context.Context, pid int) (exited bool, code int, err error) {
	var st struct {
		Exited   bool `json:"exited"`
		ExitCode int  `json:"exitcode"`
	}
	err = a.Call(ctx, map[string]any{"execute": "guest-exec-status", "arguments": map[string]int{"pid": pid}}, &st)
	return st.Exited, st.ExitCode, err
}

// run runs a short program (no output kept) and waits for its end.
func (a Agent) run(ctx context.Context, path string, args ...string) error {
	pid, err := a.start(ctx, path, args, nil)
	if err != nil {
		return err
	}
	for {
		exited, code, err := a.status(ctx, pid)
		if err != nil {
			return err
		}
		if exited {
			if code != 0 {
				return fmt.Errorf("%s in %s exited %d", path, a.Name, code)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// cleanup removes an Exec's directory (and stdin file) in the guest.
func (a Agent) cleanup(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	if err := a.run(ctx, "rm", "-rf", dir, dir+".in"); err != nil {
		a.log().Warn("could not remove a program's outputs in the guest", "domain", a.Name, "dir", dir, "err", err)
	}
}

// killProgram kills an Exec's program that ran out of time (through the
// guest's kill and the pid its shell noted).
func (a Agent) killProgram(dir string) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	if err := a.run(ctx, "sh", "-c", `kill -KILL "$(cat "$1/pid")"`, "sh", dir); err != nil {
		a.log().Warn("could not kill a guest program that ran out of time", "domain", a.Name, "err", err)
	}
}

// FreezeFS freezes the guest's file systems (guest-fsfreeze-freeze).
func (a Agent) FreezeFS(ctx context.Context) (int, error) {
	var n int
	if err := a.Call(ctx, map[string]string{"execute": "guest-fsfreeze-freeze"}, &n); err != nil {
		return 0, fmt.Errorf("freeze the file systems of %s: %w", a.Name, err)
	}
	return n, nil
}

// ThawFS thaws them (guest-fsfreeze-thaw).
func (a Agent) ThawFS(ctx context.Context) error {
	var n int
	if err := a.Call(ctx, map[string]string{"execute": "guest-fsfreeze-thaw"}, &n); err != nil {
		return fmt.Errorf("thaw the file systems of %s: %w", a.Name, err)
	}
	return nil
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
