package libvirt_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/libvirt"
	"github.com/svc-project/svc/testkit/guest"
)

// TestLibvirt_guest_exec runs programs in a real guest through its agent,
// streamed (Exec) and short (RunShort): output, exit status, stdin, an
// output past the bound, a timeout that kills the program, and a
// file-system freeze.
func TestLibvirt_guest_exec(t *testing.T) {
	d, image := newDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const addr = "127.0.0.1"
	sshPort := guest.FreePort(t, addr)
	spec := hypervisor.Spec{
		Name: hypervisor.DomainName(peerOf(d), "ns", "exec1"), CPU: 1, MemoryMiB: 256,
		BaseImage: image, BaseFormat: "qcow2", ListenAddr: addr, VNCPort: guest.FreePort(t, addr),
		Forwards: []hypervisor.Forward{{HostPort: sshPort, GuestPort: 22}},
	}
	t.Cleanup(func() { _ = d.Delete(context.Background(), spec.Name) })
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := hypervisor.SyncGuestClock(ctx, d, spec.Name, 2*time.Minute); err != nil {
		log, _ := d.ConsoleLog(spec.Name)
		t.Fatalf("the guest agent never answered: %v\nconsole:\n%s", err, log)
	}
	runWith := func(short bool, argv []string, stdin string, within time.Duration) (r hypervisor.ExecResult, stdout, stderr []byte, err error) {
		t.Helper()
		ectx, cancel := context.WithTimeout(ctx, within)
		defer cancel()
		var o, e bytes.Buffer
		c := hypervisor.ExecCommand{Argv: argv, Stdin: []byte(stdin), Stdout: &o, Stderr: &e}
		if short {
			r, err = d.RunShort(ectx, spec.Name, c)
		} else {
			r, err = d.Exec(ectx, spec.Name, c)
		}
		return r, o.Bytes(), e.Bytes(), err
	}
	run := func(argv []string, stdin string, within time.Duration) (r hypervisor.ExecResult, stdout, stderr []byte, err error) {
		t.Helper()
		return runWith(false, argv, stdin, within)
	}
	tests := []struct {
		name       string
		short      bool
		argv       []string
		stdin      string
		wantCode   int
		wantOut    string
		wantErr    string
		wantOutLen int
		truncated  bool
	}{
		{name: "output_and_status", argv: []string{"sh", "-c", "echo hello; echo oops >&2; exit 3"}, wantCode: 3, wantOut: "hello\n", wantErr: "oops\n"},
		{name: "stdin", argv: []string{"tr", "a-z", "A-Z"}, stdin: "shout\n", wantOut: "SHOUT\n"},
		{name: "signal", argv: []string{"sh", "-c", "kill -TERM $$"}, wantCode: 128 + 15},
		{name: "ten_mib", argv: []string{"head", "-c", strconv.Itoa(10 << 20), "/dev/zero"}, wantOutLen: hypervisor.MaxExecOutput, truncated: true},
		{name: "stdin_of_900_kib", argv: []string{"wc", "-c"}, stdin: strings.Repeat("x", 900<<10), wantOut: "921600\n"},
		{name: "short_output_and_status", short: true, argv: []string{"sh", "-c", "echo hello; echo oops >&2; exit 3"}, wantCode: 3, wantOut: "hello\n", wantErr: "oops\n"},
		{name: "short_stdin", short: true, argv: []string{"tr", "a-z", "A-Z"}, stdin: "shout\n", wantOut: "SHOUT\n"},
		{name: "short_signal", short: true, argv: []string{"sh", "-c", "kill -TERM $$"}, wantCode: 128 + 15},
		{name: "short_past_its_bound", short: true, argv: []string{"head", "-c", "100000", "/dev/zero"}, wantOutLen: hypervisor.MaxShortOutput, truncated: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, stdout, stderr, err := runWith(tc.short, tc.argv, tc.stdin, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if r.ExitCode != tc.wantCode || r.StdoutTruncated != tc.truncated {
				t.Fatalf("exit %d truncated %v, want %d %v (stderr %q)", r.ExitCode, r.StdoutTruncated, tc.wantCode, tc.truncated, stderr)
			}
			if tc.wantOutLen > 0 && len(stdout) != tc.wantOutLen {
				t.Fatalf("stdout %d bytes, want %d", len(stdout), tc.wantOutLen)
			}
			if tc.wantOutLen == 0 && (string(stdout) != tc.wantOut || string(stderr) != tc.wantErr) {
				t.Fatalf("stdout %q stderr %q", stdout, stderr)
			}
		})
	}

	// A short output is passed on as it is written, not when the program
	// ends: the writer stops the run once it has seen it.
	early := &stopAt{want: "early\n"}
	ectx, cancel := context.WithCancel(ctx)
	early.cancel = cancel
	_, err := d.Exec(ectx, spec.Name, hypervisor.ExecCommand{Argv: []string{"sh", "-c", "echo early; sleep 120; echo late"}, Stdout: early})
	cancel()
	if !errors.Is(err, hypervisor.ErrExecTimeout) || early.got.String() != "early\n" {
		t.Fatalf("the short output came %q (%v), not while the program ran", early.got.String(), err)
	}

	// A program that outlives its time is killed in the guest.
	if _, _, _, err := run([]string{"sleep", "397"}, "", 2*time.Second); !errors.Is(err, hypervisor.ErrExecTimeout) {
		t.Fatalf("sleep past its time: %v", err)
	}
	if _, _, _, err := runWith(true, []string{"sleep", "398"}, "", 2*time.Second); !errors.Is(err, hypervisor.ErrExecTimeout) {
		t.Fatalf("a short program past its time: %v", err)
	}
	sshAddr := net.JoinHostPort(addr, strconv.Itoa(sshPort))
	if out, err := guest.WaitRun(ctx, sshAddr, "admin", "admin", "ps"); err != nil || strings.Contains(out, "sleep 397") || strings.Contains(out, "sleep 398") {
		t.Fatalf("a timed-out program still runs: %v\n%s", err, out)
	}

	// Any guest port is reached through a forward made for it, and only
	// while it is held.
	fwd, release, err := d.OpenGuestPort(ctx, spec.Name, 22)
	if err != nil {
		t.Fatal(err)
	}
	if banner := readBanner(t, fwd); !strings.HasPrefix(banner, "SSH-2.0-") {
		t.Fatalf("through the forward: %q", banner)
	}
	// Another user of the host is refused; the peer's own user, again, is
	// carried.
	if out, err := connectAs(ctx, 65534, fwd); err == nil || strings.Contains(out, "SSH-") {
		t.Fatalf("user 65534 reached the forward: %q %v", out, err)
	}
	if out, err := connectAs(ctx, os.Getuid(), fwd); err != nil || !strings.HasPrefix(out, "SSH-2.0-") {
		t.Fatalf("the peer's user through the forward: %q %v", out, err)
	}
	release()
	if c, err := net.DialTimeout("tcp", fwd, 2*time.Second); err == nil {
		c.Close()
		t.Fatal("the forward outlived its release")
	}
	// Forwards a peer held when it crashed (never released) are closed by
	// the next run's CloseGuestPorts; the domain's own forwards, and those
	// the next run opened itself, stay.
	held := make([]string, 2)
	for i := range held {
		if held[i], _, err = d.OpenGuestPort(ctx, spec.Name, 22); err != nil {
			t.Fatal(err)
		}
	}
	next, err := libvirt.New(d.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	own, releaseOwn, err := next.OpenGuestPort(ctx, spec.Name, 22)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseOwn()
	if n, err := next.CloseGuestPorts(ctx, spec.Name); err != nil || n != 2 {
		t.Fatalf("closed %d stale forwards: %v", n, err)
	}
	for _, h := range held {
		if c, err := net.DialTimeout("tcp", h, 2*time.Second); err == nil {
			c.Close()
			t.Fatalf("the forward at %s outlived its peer's crash", h)
		}
	}
	for _, a := range []string{net.JoinHostPort(addr, strconv.Itoa(sshPort)), own} {
		if banner := readBanner(t, a); !strings.HasPrefix(banner, "SSH-2.0-") {
			t.Fatalf("the forward at %s after the clean-up: %q", a, banner)
		}
	}
	if n, err := next.CloseGuestPorts(ctx, spec.Name); err != nil || n != 0 {
		t.Fatalf("a second clean-up closed %d: %v", n, err)
	}

	// The disk grows while the guest runs, and the guest sees it; it never
	// shrinks.
	size, err := d.DiskSize(spec.Name)
	if err != nil || size <= 0 {
		t.Fatalf("disk size %d %v", size, err)
	}
	if err := d.ResizeDisk(ctx, spec.Name, size-1<<20); err == nil {
		t.Fatal("the disk shrank")
	}
	grown := size + 64<<20
	if err := d.ResizeDisk(ctx, spec.Name, grown); err != nil {
		t.Fatal(err)
	}
	if got, err := d.DiskSize(spec.Name); err != nil || got != grown {
		t.Fatalf("after the resize: %d %v, want %d", got, err, grown)
	}
	if _, out, _, err := run([]string{"cat", "/sys/block/vda/size"}, "", time.Minute); err != nil || strings.TrimSpace(string(out)) != strconv.FormatInt(grown/512, 10) {
		t.Fatalf("the guest sees %q sectors (%v), want %d", out, err, grown/512)
	}

	// A freeze runs the guest's hook (mini-linux's flushes its FAT, which
	// the kernel cannot freeze) and a thaw lets it go.
	console := func() string { log, _ := d.ConsoleLog(spec.Name); return string(log) }
	if _, err := d.FreezeFS(ctx, spec.Name); err != nil {
		t.Fatalf("freeze: %v", err)
	}
	if err := d.ThawFS(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	// The hook's lines reach the log through the serial port and virtlogd,
	// after the agent has answered.
	onConsole := func(what string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(console(), what) < n {
			if time.Now().After(deadline) {
				t.Fatalf("%q not %d times on the console:\n%s", what, n, console())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	onConsole("file systems freeze (guest agent)", 1)
	onConsole("file systems thaw (guest agent)", 1)

	// A guest that ignores the shutdown (libvirt waits a minute for one
	// asked through the agent, then presses the power button) is frozen
	// before it is forced off.
	if _, _, _, err := run([]string{"sh", "-c", "printf '#!/bin/sh\\nexit 0\\n' > /sbin/shutdown && killall acpid"}, "", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(ctx, spec.Name, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	onConsole("file systems freeze (guest agent)", 2) // the second before the forced stop
}

// connectAs connects to addr (host:port) from a process of user uid (bash's
// /dev/tcp) and returns the first line the server sent.
func connectAs(ctx context.Context, uid int, addr string) (string, error) {
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.CommandContext(ctx, "bash", "-c", `exec 3<>"/dev/tcp/$1/$2" && timeout 10 head -n 1 <&3`, "bash", host, port)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// readBanner reads the SSH banner the server at addr sends.
func readBanner(t *testing.T, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	line, err := guest.Banner(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// stopAt collects what is written and cancels once it holds want.
type stopAt struct {
	want   string
	cancel context.CancelFunc
	got    bytes.Buffer
}

func (s *stopAt) Write(b []byte) (int, error) {
	s.got.Write(b)
	if strings.Contains(s.got.String(), s.want) {
		s.cancel()
	}
	return len(b), nil
}
