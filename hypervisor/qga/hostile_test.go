package qga

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/svc-project/svc/hypervisor"
)

// scripted is an agent whose answers, a line each, are given: what a
// guest of its own making may send. Past the last line it does not answer.
func scripted(answers []byte) Agent {
	c := &Conn{r: bufio.NewReader(bytes.NewReader(answers))}
	return Agent{Name: "hostile", Call: func(ctx context.Context, _, out any) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.answer(out); err != nil {
			if broken(err) {
				return ErrNoAnswer
			}
			return err
		}
		return nil
	}}
}

// What a guest answers is checked before it is used: a write it claims
// larger than what was sent (this one made the host's handler panic with
// slice bounds out of range), a read larger than asked, counts that lie,
// exit codes out of range, a name with terminal controls.
func TestAgent_hostile_answers(t *testing.T) {
	ok := `{"return":{}}` + "\n"
	cases := []struct {
		name    string
		answers string
		run     func(Agent) error
		wantErr string
	}{
		{"a write of more than was sent", `{"return":3}` + "\n" + `{"return":{"count":999999999}}` + "\n" + ok,
			func(a Agent) error { return a.writeFile(context.Background(), "/tmp/x", []byte("hello")) }, "says it wrote 999999999 bytes of the 5"},
		{"a write of nothing", `{"return":3}` + "\n" + `{"return":{"count":0}}` + "\n" + ok,
			func(a Agent) error { return a.writeFile(context.Background(), "/tmp/x", []byte("hello")) }, "says it wrote 0 bytes"},
		{"a negative handle", `{"return":-4}` + "\n",
			func(a Agent) error { return a.writeFile(context.Background(), "/tmp/x", []byte("hello")) }, "handle -4"},
		{"a read larger than asked", `{"return":3}` + "\n" + `{"return":{"count":12,"buf-b64":"aGVsbG8gd29ybGQh"}}` + "\n" + ok,
			func(a Agent) error { _, err := a.readFile(context.Background(), "/tmp/x", 0, 4); return err }, "for a read of 4 bytes"},
		{"a read whose count lies", `{"return":3}` + "\n" + `{"return":{"count":2,"buf-b64":"aGVsbG8="}}` + "\n" + ok,
			func(a Agent) error { _, err := a.readFile(context.Background(), "/tmp/x", 0, 64); return err }, "says it read 2 bytes"},
		{"a read that is no base64", `{"return":3}` + "\n" + `{"return":{"count":2,"buf-b64":"@@@@"}}` + "\n" + ok,
			func(a Agent) error { _, err := a.readFile(context.Background(), "/tmp/x", 0, 64); return err }, "no base64"},
		{"an exit code out of range", `{"return":{"pid":7}}` + "\n" + `{"return":{"exited":true,"exitcode":-70000}}` + "\n",
			func(a Agent) error {
				_, err := a.RunShort(context.Background(), hypervisor.ExecCommand{Argv: []string{"true"}})
				return err
			}, "exit code -70000"},
		{"a signal out of range", `{"return":{"pid":7}}` + "\n" + `{"return":{"exited":true,"signal":100000}}` + "\n",
			func(a Agent) error {
				_, err := a.RunShort(context.Background(), hypervisor.ExecCommand{Argv: []string{"true"}})
				return err
			}, "signal 100000"},
		{"no pid", `{"return":{"pid":0}}` + "\n",
			func(a Agent) error {
				_, err := a.RunShort(context.Background(), hypervisor.ExecCommand{Argv: []string{"true"}})
				return err
			}, "pid 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run(scripted([]byte(c.answers)))
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, c.wantErr)
			}
		})
	}
}

// A program whose end the agent never reports, run with a ctx that sets
// no deadline, is polled under one of hypervisor.MaxShortRun: before,
// RunShort polled for ever (and the hot pools' fill with it).
func TestAgent_RunShort_without_a_deadline_has_one(t *testing.T) {
	var deadlines []time.Duration
	a := Agent{Name: "silent", Call: func(ctx context.Context, cmd, out any) error {
		d, ok := ctx.Deadline()
		if !ok {
			return errors.New("a call with no deadline")
		}
		deadlines = append(deadlines, time.Until(d))
		if cmd.(map[string]any)["execute"] == "guest-exec" {
			return json.Unmarshal([]byte(`{"pid":9}`), out)
		}
		if len(deadlines) > 3 {
			return context.DeadlineExceeded // the bound's end, without waiting a minute for it
		}
		return nil // never exited
	}}
	_, err := a.RunShort(context.Background(), hypervisor.ExecCommand{Argv: []string{"sleep", "inf"}})
	if err == nil || len(deadlines) < 3 {
		t.Fatalf("RunShort = %v after %d calls", err, len(deadlines))
	}
	for _, d := range deadlines {
		if d > hypervisor.MaxShortRun || d < hypervisor.MaxShortRun-10*time.Second {
			t.Fatalf("a call's deadline %s from now, want about %s", d, hypervisor.MaxShortRun)
		}
	}
}

// FuzzAgent_answers: whatever a guest's agent answers, a line per command,
// nothing on the host panics, and what reaches the host's callers keeps
// its bounds (outputs cut at theirs, a printable name).
func FuzzAgent_answers(f *testing.F) {
	for _, s := range []string{
		`{"return":3}` + "\n" + `{"return":{"count":999999999}}` + "\n",
		`{"return":{"pid":7}}` + "\n" + `{"return":{"exited":true,"exitcode":0,"out-data":"aGk="}}` + "\n",
		`{"return":{"pretty-name":"Debian\u001b[2J"}}` + "\n" + `{"return":[{"ip-addresses":[{"ip-address":"10.0.0.2"}]}]}` + "\n",
		`{"error":{"class":"GenericError","desc":"no"}}` + "\n",
		`{"return":{"pid":7}}` + "\n" + `{"return":3}` + "\n" + `{"return":{"count":5,"buf-b64":"aGVsbG8="}}` + "\n",
		"\xff{\"return\":1}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answers []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		var out, errOut bytes.Buffer
		a := scripted(answers)
		if _, err := a.RunShort(ctx, hypervisor.ExecCommand{Argv: []string{"x"}, Stdout: &out, Stderr: &errOut, MaxOutput: 16}); err == nil && (out.Len() > 16 || errOut.Len() > 16) {
			t.Fatalf("RunShort passed on %d and %d bytes, bound 16", out.Len(), errOut.Len())
		}
		out.Reset()
		a = scripted(answers)
		_, _ = a.Exec(ctx, hypervisor.ExecCommand{Argv: []string{"x"}, Stdout: &out, MaxOutput: 16})
		if out.Len() > 16 {
			t.Fatalf("Exec passed on %d bytes, bound 16", out.Len())
		}
		_ = scripted(answers).writeFile(ctx, "/tmp/x", bytes.Repeat([]byte("a"), 100))
		if b, err := scripted(answers).readFile(ctx, "/tmp/x", 0, 8); err == nil && len(b) > 8 {
			t.Fatalf("readFile of 8 bytes passed on %d", len(b))
		}
		info, _ := scripted(answers).Info(ctx)
		if len([]rune(info.OS)) > maxOSName || strings.IndexFunc(info.OS, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 || len(info.IPs) > maxIPs {
			t.Fatalf("Info = %+v", info)
		}
	})
}
