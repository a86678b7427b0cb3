package vz

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/guest"
)

// A hot guest restored from a template serves nothing (no forward, no
// screen) until it is claimed; the claim opens the VM's forward, to the
// guest's port, and its screen with the VM's password, keeps them in the
// runner's config, and is refused a second time. Stopped and started
// again, the VM boots with its forwards.
func TestDriver_claim_hot(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	mem := td.Driver.(hypervisor.MemorySnapshots)
	tpl := td.spec("_template.k1", "")
	if err := td.Create(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	if err := mem.SaveMemory(ctx, tpl.Name, mem.MemoryPath(tpl.Name)); err != nil {
		t.Fatal(err)
	}
	hot := td.spec("_hot.k1.a1", "")
	hot.Hot = true
	if err := mem.RestoreAs(ctx, tpl.Name, hot); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, hot.Name, hypervisor.StateRunning)

	// The guest's SSH stand-in, at the address its lease gives it.
	_, guestPort := echoGuest(t)
	rc, err := readRunnerConfig(filepath.Join(td.cfg.Dir, hot.Name))
	if err != nil {
		t.Fatal(err)
	}
	lease := fmt.Sprintf("{\n\tname=hot\n\tip_address=127.0.0.1\n\thw_address=1,%s\n\tlease=0x7fffffff\n}\n", rc.Machine.MAC)
	if err := os.WriteFile(td.cfg.Leases, []byte(lease), 0o600); err != nil {
		t.Fatal(err)
	}
	sshPort, vncPort := guest.FreePort(t, "127.0.0.1"), guest.FreePort(t, "127.0.0.1")
	ssh, vnc := net.JoinHostPort("127.0.0.1", strconv.Itoa(sshPort)), net.JoinHostPort("127.0.0.1", strconv.Itoa(vncPort))
	for _, addr := range []string{ssh, vnc} {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			t.Fatalf("%s answers before the claim", addr)
		}
	}

	vm := hot
	vm.Hot, vm.VNCPort, vm.VNCPassword = false, vncPort, "pw-vm"
	vm.Forwards = []hypervisor.Forward{{HostPort: sshPort, GuestPort: guestPort}}
	claimer := td.Driver.(hypervisor.HotClaimer)
	if err := claimer.ClaimHot(ctx, vm); err != nil {
		t.Fatal(err)
	}
	echo := func() {
		t.Helper()
		c, err := net.DialTimeout("tcp", ssh, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintln(c, "hello")
		if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "echo: hello\n" {
			t.Fatalf("through the VM's forward: %q %v", line, err)
		}
	}
	echo()
	// The screen asks for the VM's password (the guest behind it has no
	// screen here: what matters is that the proxy takes that password).
	if _, err := rfb.Authenticate(vnc, "pw-vm", 10*time.Second); errors.Is(err, rfb.ErrAuthFailed) {
		t.Fatalf("the screen refused the VM's password: %v", err)
	}
	if _, err := rfb.Authenticate(vnc, "not-the-password", 10*time.Second); !errors.Is(err, rfb.ErrAuthFailed) {
		t.Fatalf("the screen with another password: %v, want it refused", err)
	}
	got, err := readRunnerConfig(filepath.Join(td.cfg.Dir, hot.Name))
	if err != nil {
		t.Fatal(err)
	}
	if got.VNCPort != vncPort || got.VNCPassword != "pw-vm" || len(got.Forwards) != 1 || got.Forwards[0].HostPort != sshPort || got.Machine.RestoreFrom != "" {
		t.Fatalf("the claimed guest's config %+v", got)
	}
	if err := claimer.ClaimHot(ctx, vm); err == nil {
		t.Fatal("a guest was claimed twice")
	}

	if err := td.Stop(ctx, vm.Name, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := td.Start(ctx, vm.Name); err != nil {
		t.Fatal(err)
	}
	log, _ := td.Driver.(hypervisor.Console).ConsoleLog(vm.Name)
	if strings.Count(string(log), "booted "+vm.Name) != 1 {
		t.Fatalf("console log %q: the claimed VM did not boot at its start", log)
	}
	echo()
}
