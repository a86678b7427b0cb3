package qgatest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Blocked are the agent's commands disabled in tests.
var Blocked = []string{
	"guest-set-time", "guest-shutdown", "guest-fsfreeze-freeze", "guest-fsfreeze-freeze-list", "guest-fsfreeze-thaw",
	"guest-fstrim", "guest-suspend-disk", "guest-suspend-ram", "guest-suspend-hybrid", "guest-set-vcpus",
	"guest-set-user-password", "guest-set-memory-blocks", "guest-ssh-add-authorized-keys", "guest-ssh-remove-authorized-keys",
}

// Start runs qemu-ga listening on a unix socket until the test ends and
// returns the socket's path. Without qemu-ga the test is skipped, or fails
// where SVC_REQUIRE_LIBVIRT says the machine must have it.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("qemu-ga")
	if err != nil {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") != "" {
			t.Fatal("qemu-ga is missing (scripts/install-deps.sh installs qemu-guest-agent)")
		}
		t.Skip("qemu-ga is missing (scripts/install-deps.sh installs qemu-guest-agent)")
	}
	dir, err := os.MkdirTemp("", "qga") // short: a socket path is bounded
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "agent.sock")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-m", "unix-listen", "-p", sock, "-t", dir, "-f", filepath.Join(dir, "pid"),
		"-l", filepath.Join(dir, "log"), "-b", strings.Join(Blocked, ","))
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	// Ready once it accepts: its socket's file exists from its bind, before
	// its listen (a connection between them is refused, and a process just
	// started on a busy machine can be held there a while).
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cancel(); <-exited })
	log := func() []byte { b, _ := os.ReadFile(filepath.Join(dir, "log")); return b }
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			return sock
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("qemu-ga exited (%v): %s", err, log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("qemu-ga accepted no connection on %s in 10 s: %s", sock, log())
		}
	}
}
