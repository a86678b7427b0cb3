package gitlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/svc-project/svc/api"
)

// runScript starts a job's script in the guest in a process group of its
// own (setsid, or perl's setpgrp on a guest without it, as macOS is),
// after writing the group's id to $1, under the shell $2 ("auto": bash
// where the guest has it, else sh). A stop then reaches every process the
// script started, not only its shell.
const runScript = `echo $$ >"$1" || exit 125
s=$2
if [ "$s" = auto ]; then s=sh; if command -v bash >/dev/null 2>&1; then s=bash; fi; fi
if command -v setsid >/dev/null 2>&1; then exec setsid "$s" "$3"; fi
if command -v perl >/dev/null 2>&1; then exec perl -e 'setpgrp(0, 0); exec @ARGV or exit 127' "$s" "$3"; fi
exec "$s" "$3"`

// stopScript signals the script's process group ($1 holds its id) with
// $2, or its shell alone where it has no group of its own.
const stopScript = `g=$(cat "$1" 2>/dev/null) || exit 0
kill -"$2" "-$g" 2>/dev/null || kill -"$2" "$g" 2>/dev/null
exit 0`

// aliveScript exits 0 while a process of the script's group lives.
const aliveScript = `g=$(cat "$1" 2>/dev/null) || exit 1
kill -0 "-$g" 2>/dev/null || kill -0 "$g" 2>/dev/null`

// Run carries one of the job's scripts (gitlab-runner writes it to a file
// and names the stage) into the guest and runs it there, streaming its
// output; the script's failure is a BuildFailure. Told to stop (ctx ends:
// gitlab-runner's SIGTERM when the job is cancelled or times out), it
// sends TERM to every process of the script, KILL after Grace, and ends
// as a system failure.
func (d *Driver) Run(ctx context.Context, script, stage string) error {
	name, err := d.ownVM(ctx)
	if err != nil {
		return err
	}
	body, err := os.ReadFile(script)
	if err != nil {
		return fmt.Errorf("read the stage's script: %w", err)
	}
	if len(body) > api.MaxRunStdin {
		return fmt.Errorf("the %s script is %d bytes, at most %d", stage, len(body), api.MaxRunStdin)
	}
	// The script goes to a file first, so that what it runs reads no stdin
	// of ours.
	dir := "/var/tmp/svc-ci"
	path, group := dir+"/"+clean(stage)+".sh", dir+"/"+clean(stage)+".pgid"
	put := api.RunRequest{Command: []string{"sh", "-c", `umask 077 && mkdir -p /var/tmp/svc-ci && cat > "$0"`, path}, Stdin: string(body)}
	if r, err := d.Client.RunVM(ctx, d.Namespace, name, put); err != nil || r.ExitCode != 0 {
		return fmt.Errorf("copy the %s script into VM %s: %v %s", stage, name, err, r.Stderr)
	}
	shell := first(d.job("SVC_SHELL"), d.Shell, "auto")
	// The stream outlives ctx: told to stop, the script is asked to end
	// first (stop), and the stream ends with it, or at last with KILL.
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	type stopped struct {
		ran bool
		err error
	}
	streamed, stops := make(chan struct{}), make(chan stopped, 1)
	go func() {
		select {
		case <-streamed:
			stops <- stopped{}
			return
		case <-ctx.Done():
		}
		err := d.stop(context.WithoutCancel(ctx), name, group)
		cancel()
		stops <- stopped{true, err}
	}()
	timeout := api.MaxRunTimeout
	r, err := d.Client.RunVMStream(sctx, d.Namespace, name, api.RunRequest{Command: []string{"sh", "-c", runScript, "svc-ci", group, shell, path}, TimeoutSeconds: &timeout}, d.Stdout, d.Stderr)
	close(streamed)
	st := <-stops
	if ctx.Err() != nil {
		if !st.ran { // the script ended as the stop came
			st.err = d.stop(context.WithoutCancel(ctx), name, group)
		}
		return fmt.Errorf("the %s script in VM %s was stopped (the job was cancelled or timed out): %w", stage, name, errors.Join(context.Cause(ctx), st.err))
	}
	if err != nil {
		return fmt.Errorf("run the %s script in VM %s: %w", stage, name, err)
	}
	if r.ExitCode != 0 {
		return BuildFailure{Code: r.ExitCode}
	}
	return nil
}

func (d *Driver) grace() time.Duration {
	if d.Grace > 0 {
		return d.Grace
	}
	return 10 * time.Second
}

// stop ends a script's processes in the guest: TERM to its group, then,
// once Grace passed with any of them alive, KILL. It returns when none is
// left (or it could not tell).
func (d *Driver) stop(ctx context.Context, vm, group string) error {
	fmt.Fprintf(d.Stderr, "svc: stopping the script in VM %s (TERM, KILL after %s)\n", vm, d.grace())
	signal := func(sig string) error {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := d.Client.RunVM(sctx, d.Namespace, vm, api.RunRequest{Command: []string{"sh", "-c", stopScript, "svc-stop", group, sig}})
		return err
	}
	alive := func() bool {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		r, err := d.Client.RunVM(sctx, d.Namespace, vm, api.RunRequest{Command: []string{"sh", "-c", aliveScript, "svc-alive", group}})
		return err == nil && r.ExitCode == 0
	}
	if err := signal("TERM"); err != nil {
		return fmt.Errorf("TERM the script's processes: %w", err)
	}
	for deadline := time.Now().Add(d.grace()); time.Now().Before(deadline); {
		if !alive() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err := signal("KILL"); err != nil {
		return fmt.Errorf("KILL the script's processes: %w", err)
	}
	if alive() {
		return errors.New("the script's processes outlived KILL")
	}
	return nil
}
