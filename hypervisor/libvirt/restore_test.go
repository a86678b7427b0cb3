package libvirt_test

import (
	"context"
	"errors"
	"net"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/guest"
)

// A booted guest saved once (a template) starts again as several new
// domains, each running where the template was saved (its boot, not a new
// one) on a disk of its own, with its own forwards and screen password; a
// truncated memory file restores nothing and leaves nothing behind.
func TestLibvirt_restore_as(t *testing.T) {
	const peer = "hvrestore"
	d, image := realDriver(t, peer)
	ctx, cancel := context.WithTimeout(context.Background(), 3*hypervisor.BootTimeout) // a few boots, each within its bound
	defer cancel()
	const addr = "127.0.0.1"
	spec := func(name, password string) hypervisor.Spec {
		s := hypervisor.Spec{
			Name: hypervisor.DomainName(peer, "ns", name), CPU: 1, MemoryMiB: 256,
			BaseImage: image, BaseFormat: "qcow2", ListenAddr: addr, VNCPassword: password,
			Forwards: []hypervisor.Forward{{HostPort: guest.FreePort(t, addr), GuestPort: 22}},
		}
		if password != "" {
			s.VNCPort = guest.FreePort(t, addr)
		}
		t.Cleanup(func() { _ = d.Delete(context.Background(), s.Name) })
		return s
	}
	run := func(s hypervisor.Spec, cmd string) string {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, hypervisor.BootTimeout)
		defer cancel()
		out, err := guest.WaitRun(wctx, net.JoinHostPort(addr, strconv.Itoa(s.Forwards[0].HostPort)), "admin", "admin", cmd)
		if err != nil {
			log, _ := d.ConsoleLog(s.Name)
			t.Fatalf("%s: %v\nconsole:\n%s", s.Name, err, log)
		}
		return strings.TrimSpace(out)
	}
	tpl := spec("template", "") // no screen
	if err := d.Create(ctx, tpl); err != nil {
		t.Fatal(err)
	}
	boot := run(tpl, "cat /proc/sys/kernel/random/boot_id")
	// the template's clock an hour behind (set through its agent): a restore
	// keeps it until the guest's agent sets it
	for deadline := time.Now().Add(30 * time.Second); ; {
		hourAgo := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
		out, err := osexec.CommandContext(ctx, "virsh", "-c", "qemu:///system", "domtime", tpl.Name, "--time", hourAgo).CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) { // the agent starts just after SSH
			log, _ := d.ConsoleLog(tpl.Name)
			t.Fatalf("virsh domtime: %v %s\nconsole:\n%s", err, out, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := d.SaveMemory(ctx, tpl.Name, d.MemoryPath(tpl.Name)); err != nil {
		t.Fatal(err)
	}

	a, b := spec("a", "pw-aaaa1"), spec("b", "pw-bbbb2")
	for _, s := range []hypervisor.Spec{a, b} {
		start := time.Now()
		if err := d.RestoreAs(ctx, tpl.Name, s); err != nil {
			t.Fatalf("restore %s: %v", s.Name, err)
		}
		t.Logf("%s restored in %v", s.Name, time.Since(start).Round(time.Millisecond))
	}
	if err := d.RestoreAs(ctx, tpl.Name, a); err == nil {
		t.Fatal("a second restore onto a running domain was taken")
	}
	for _, s := range []hypervisor.Spec{a, b} {
		if got := run(s, "cat /proc/sys/kernel/random/boot_id"); got != boot {
			t.Fatalf("%s: boot id %s, the template's %s: it booted instead of restoring", s.Name, got, boot)
		}
	}
	guestLag := func(s hypervisor.Spec) time.Duration {
		t.Helper()
		secs, err := strconv.ParseInt(run(s, "date +%s"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return time.Since(time.Unix(secs, 0)).Round(time.Second)
	}
	if lag := guestLag(b); lag < 50*time.Minute {
		t.Fatalf("b's clock lags %v: the template's clock did not go with it", lag)
	}
	if err := hypervisor.SyncGuestClock(ctx, d, a.Name, 10*time.Second); err != nil {
		t.Fatalf("the guest agent did not set a's clock: %v", err)
	}
	if lag := guestLag(a); lag > 3*time.Second || lag < -3*time.Second {
		t.Fatalf("a's clock is off by %v after the agent set it", lag)
	}
	run(a, "echo only-a > /data/mark; sync")
	if got := run(b, "cat /data/mark 2>&1 || true"); strings.Contains(got, "only-a") {
		t.Fatal("a file written in one restored VM is in the other: they share a disk")
	}
	if _, err := rfb.Authenticate(net.JoinHostPort(addr, strconv.Itoa(a.VNCPort)), a.VNCPassword, 10*time.Second); err != nil {
		t.Fatalf("a's screen with a's password: %v", err)
	}
	if _, err := rfb.Authenticate(net.JoinHostPort(addr, strconv.Itoa(a.VNCPort)), b.VNCPassword, 10*time.Second); err == nil {
		t.Fatal("a's screen took b's password")
	}
	// a restarted VM boots from its own disk, which keeps what it wrote
	if err := d.Stop(ctx, a.Name, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.Start(ctx, a.Name); err != nil {
		t.Fatal(err)
	}
	if got := run(a, "cat /data/mark"); got != "only-a" {
		t.Fatalf("after a restart a reads %q", got)
	}

	// a truncated memory file
	fi, err := os.Stat(d.MemoryPath(tpl.Name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(d.MemoryPath(tpl.Name), fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	c := spec("c", "pw-cccc3")
	if err := d.RestoreAs(ctx, tpl.Name, c); err == nil {
		t.Fatal("a truncated memory file was restored")
	} else {
		t.Logf("truncated: %v", err)
	}
	doms, err := d.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, dom := range doms {
		if dom.Name == c.Name {
			t.Fatalf("the failed restore left its domain (%s)", dom.State)
		}
	}
	if _, err := os.Stat(d.DiskPath(c.Name)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed restore left its disk: %v", err)
	}
}
