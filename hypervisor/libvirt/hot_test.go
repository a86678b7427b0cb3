package libvirt_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/guest"
)

// On real libvirt: a hot guest restored from a saved template listens on
// no host port (no forwards, its screen made with -vnc none); its claim
// opens the VM's SSH forward and screen (with the VM's password, not the
// pool's), and makes them the domain's definition, so that a stop and a
// start keep them. A domain that is not running is not claimed.
func TestLibvirt_claim_hot(t *testing.T) {
	const peer = "hvhot"
	d, image := realDriver(t, peer)
	// Three boots (the template's, the claimed guest's, a cold start),
	// each waited for within its own bound.
	ctx, cancel := context.WithTimeout(context.Background(), 3*hypervisor.BootTimeout)
	defer cancel()
	booted := func(domain string, wait func(context.Context) error) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, hypervisor.BootTimeout)
		defer wcancel()
		if err := wait(wctx); err != nil {
			log, _ := d.ConsoleLog(domain)
			t.Fatalf("%v\nconsole of %s:\n%s", err, domain, log)
		}
	}
	const addr = "127.0.0.1"
	base := hypervisor.Spec{CPU: 1, MemoryMiB: 256, BaseImage: image, BaseFormat: "qcow2", ListenAddr: addr}
	tpl := base
	tpl.Name, tpl.Forwards = hypervisor.TemplateDomain(peer, "k"), []hypervisor.Forward{{HostPort: guest.FreePort(t, addr), GuestPort: 22}}
	t.Cleanup(func() { _ = d.Delete(context.Background(), tpl.Name) })
	if err := d.Create(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	booted(tpl.Name, func(wctx context.Context) error {
		_, err := guest.WaitBanner(wctx, net.JoinHostPort(addr, strconv.Itoa(tpl.Forwards[0].HostPort)))
		return err
	})
	if err := d.SaveMemory(ctx, tpl.Name, d.MemoryPath(tpl.Name)); err != nil {
		t.Fatal(err)
	}

	hot := base
	hot.Name, hot.Hot, hot.VNCPassword = hypervisor.HotDomain(peer, "k", "g1"), true, "pool-pw1"
	t.Cleanup(func() { _ = d.Delete(context.Background(), hot.Name) })
	if err := d.RestoreAs(ctx, tpl.Name, hot); err != nil {
		t.Fatal(err)
	}
	if on := guest.QEMUListens(t, hot.Name); len(on) != 0 {
		t.Fatalf("the hot guest listens on %v before its claim", on)
	}

	vm := hot
	vm.Hot, vm.VNCPassword = false, "vm-pass1"
	vm.VNCPort = guest.FreePort(t, addr)
	vm.Forwards = []hypervisor.Forward{{HostPort: guest.FreePort(t, addr), GuestPort: 22}}
	start := time.Now()
	if err := d.ClaimHot(ctx, vm); err != nil {
		t.Fatal(err)
	}
	t.Logf("claimed in %v", time.Since(start).Round(time.Millisecond))
	sshAddr := net.JoinHostPort(addr, strconv.Itoa(vm.Forwards[0].HostPort))
	booted(vm.Name, func(wctx context.Context) error {
		if _, err := guest.WaitRun(wctx, sshAddr, "admin", "admin", "true"); err != nil {
			return fmt.Errorf("ssh through the claimed forward: %w", err)
		}
		return nil
	})
	vnc := net.JoinHostPort(addr, strconv.Itoa(vm.VNCPort))
	if _, err := rfb.Authenticate(vnc, vm.VNCPassword, 10*time.Second); err != nil {
		t.Fatalf("the screen with the VM's password: %v", err)
	}
	if _, err := rfb.Authenticate(vnc, hot.VNCPassword, 10*time.Second); !errors.Is(err, rfb.ErrAuthFailed) {
		t.Fatalf("the screen with the pool's password: %v", err)
	}
	// Stopped and started from its definition, it has the VM's forward.
	if err := d.Stop(ctx, vm.Name, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.ClaimHot(ctx, vm); err == nil {
		t.Fatal("a stopped domain was claimed")
	}
	if err := d.Start(ctx, vm.Name); err != nil {
		t.Fatal(err)
	}
	// (One deadline for the three boots before: under load, with the
	// template's boot slow, the third ran out of it.)
	booted(vm.Name, func(wctx context.Context) error {
		if _, err := guest.WaitRun(wctx, sshAddr, "admin", "admin", "true"); err != nil {
			return fmt.Errorf("ssh after a stop and a start: %w", err)
		}
		return nil
	})
}
