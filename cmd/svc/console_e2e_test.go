package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/poll"
)

var consoleAddrRE = regexp.MustCompile(` is at (\S+) \(VNC`)

// checkConsoleBridge runs 'svc vm console VM' as a user would and connects
// two VNC clients to the port it prints, both at once, with no password:
// each gets the VM's screen with text on it. Ctrl-C then ends the command
// with status 0.
func checkConsoleBridge(t *testing.T, bin, apiURL, vm string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd, addr, stderr := startListener(ctx, t, bin, apiURL, consoleAddrRE, "vm", "console", vm)
	m := []string{"", addr}
	for i := range 2 { // the first stays open while the second connects
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", m[1])
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(2 * time.Minute))
		if _, err := rfb.Login(conn, ""); err != nil {
			t.Fatalf("client %d: VNC opening at %s without a password: %v; stderr: %s", i, m[1], err, stderr.String())
		}
		si, err := rfb.ClientInit(conn)
		if err != nil || si.Width < 640 || si.Height < 400 || si.BitsPerPixel < 24 {
			t.Fatalf("client %d: server init %+v %v", i, si, err)
		}
		if err := poll.Until(ctx, time.Minute, func() error {
			px, err := rfb.Frame(conn, si)
			if err != nil {
				t.Fatalf("client %d: frame: %v", i, err)
			}
			lit := 0
			for j := 0; j+3 < len(px); j += si.BitsPerPixel / 8 {
				if px[j]|px[j+1]|px[j+2] != 0 {
					lit++
				}
			}
			if lit < 500 {
				return fmt.Errorf("client %d: %d lit pixels", i, lit)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("svc vm console after Ctrl-C: %v; stderr: %s", err, stderr.String())
	}
}

// startListener starts the binary with args (a command that listens until
// Ctrl-C) and returns it and the address its first line names (re's
// first group); the process is killed when the test ends.
func startListener(ctx context.Context, t *testing.T, bin, apiURL string, re *regexp.Regexp, args ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--api-url", apiURL}, args...)...)
	cmd.Env = append(os.Environ(), "SVC_CONFIG="+filepath.Join(t.TempDir(), "config.json"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	m := re.FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("svc %v printed %q (%v); stderr: %s", args, line, err, stderr.String())
	}
	return cmd, m[1], stderr
}
