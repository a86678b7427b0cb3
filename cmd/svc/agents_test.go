package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/poll"
)

// runAgent starts 'svc agent' with args, its output in dir/name.log and
// env added to the test's environment. The agent dies with the test
// process, is stopped (SIGTERM) when the test ends, and its log is shown
// when the test failed.
func runAgent(t *testing.T, bin, dir, name string, env []string, args ...string) *agentProc {
	t.Helper()
	a := &agentProc{name: name, logFile: filepath.Join(dir, name+".log")}
	lf, err := os.Create(a.logFile)
	if err != nil {
		t.Fatal(err)
	}
	a.cmd = exec.Command(bin, append([]string{"agent", "--name", name}, args...)...)
	a.cmd.Env = append(os.Environ(), env...)
	a.cmd.Stdout, a.cmd.Stderr = lf, lf
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = lf.Close()
	a.exited = make(chan struct{})
	go func() {
		_ = a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			b, _ := os.ReadFile(a.logFile)
			t.Logf("--- %s log:\n%s", a.name, b)
		}
	})
	return a
}

// stop ends the agent (SIGTERM) and waits for it.
func (a *agentProc) stop() {
	select {
	case <-a.exited:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	<-a.exited
}

// kill ends the agent as a crash would.
func (a *agentProc) kill() {
	_ = a.cmd.Process.Kill()
	<-a.exited
}

// waitExit waits (bounded) for the agent to exit on its own and returns its
// exit code and log.
func (a *agentProc) waitExit(t *testing.T, timeout time.Duration) (int, string) {
	t.Helper()
	select {
	case <-a.exited:
	case <-time.After(timeout):
		t.Fatalf("%s still runs after %s", a.name, timeout)
	}
	b, _ := os.ReadFile(a.logFile)
	return a.cmd.ProcessState.ExitCode(), string(b)
}

// logHas waits (bounded) until the agent's log holds s.
func (a *agentProc) logHas(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	if err := poll.Until(context.Background(), timeout, func() error {
		b, _ := os.ReadFile(a.logFile)
		if !strings.Contains(string(b), s) {
			return os.ErrNotExist
		}
		return nil
	}); err != nil {
		b, _ := os.ReadFile(a.logFile)
		t.Fatalf("%s's log lacks %q:\n%s", a.name, s, b)
	}
}
