package libvirt_test

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/libvirt"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/peerclaim"
)

func newDriver(t *testing.T) (*libvirt.Driver, string) {
	t.Helper()
	// Each test's domains under a peer name of its own (peerclaim).
	peer := fmt.Sprintf("hv%08x", crc32.ChecksumIEEE([]byte(t.Name())))
	peerclaim.For(t, peerclaim.Peer(peer))
	d, err := libvirt.New(libvirt.Config{Dir: guest.TempDir(t), Prefix: hypervisor.DomainPrefix(peer)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	image := guest.RequireLibvirt(t)
	return d, image
}

func TestLibvirt_lifecycle(t *testing.T) {
	d, image := newDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*hypervisor.BootTimeout) // a few boots, each within its bound
	defer cancel()
	const addr = "127.0.0.1"
	sshPort, vncPort := guest.FreePort(t, addr), guest.FreePort(t, addr)
	spec := hypervisor.Spec{
		Name: hypervisor.DomainName(peerOf(d), "ns", "vm1"), CPU: 1, MemoryMiB: 256,
		BaseImage: image, BaseFormat: "qcow2", ListenAddr: addr, VNCPort: vncPort, VNCPassword: "pw-3x7q",
		Forwards: []hypervisor.Forward{{HostPort: sshPort, GuestPort: 22}},
	}
	t.Cleanup(func() { _ = d.Delete(context.Background(), spec.Name) })
	sshAddr := net.JoinHostPort(addr, strconv.Itoa(sshPort))
	run := func(cmd string) string {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, hypervisor.BootTimeout)
		defer cancel()
		out, err := guest.WaitRun(wctx, sshAddr, "admin", "admin", cmd)
		if err != nil {
			log, _ := d.ConsoleLog(spec.Name)
			t.Fatalf("%v\nconsole:\n%s", err, log)
		}
		return out
	}
	state := func() hypervisor.State {
		t.Helper()
		doms, err := d.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, dom := range doms {
			if dom.Name == spec.Name {
				return dom.State
			}
		}
		return ""
	}

	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := run("uname -n"); !strings.Contains(got, "mini-linux") {
		t.Fatalf("uname -n = %q", got)
	}
	// The screen asks for the VM's password: no "None" security type, the
	// password opens it, another does not.
	vncAddr := net.JoinHostPort(addr, strconv.Itoa(vncPort))
	types, err := rfb.Authenticate(vncAddr, spec.VNCPassword, 10*time.Second)
	if err != nil || slices.Contains(types, rfb.SecurityNone) {
		t.Fatalf("VNC with the password: types %v, %v", types, err)
	}
	if _, err := rfb.Authenticate(vncAddr, "guessed!", 10*time.Second); !errors.Is(err, rfb.ErrAuthFailed) {
		t.Fatalf("VNC with another password: %v", err)
	}
	run("echo kept > /data/proof && sync")

	// A clean stop through the guest's agent (not forced off), then a
	// start: the disk keeps the file.
	if err := hypervisor.SyncGuestClock(ctx, d, spec.Name, time.Minute); err != nil {
		t.Fatalf("the guest agent never answered: %v", err)
	}
	if err := d.Stop(ctx, spec.Name, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != hypervisor.StateShutoff {
		t.Fatalf("after stop: %s", s)
	}
	if log, _ := d.ConsoleLog(spec.Name); !strings.Contains(string(log), "poweroff asked by the guest agent") {
		t.Fatalf("the guest was not shut down through its agent; console:\n%s", log)
	}
	if out, err := exec.CommandContext(ctx, "virsh", "-c", "qemu:///system", "domstate", "--reason", spec.Name).CombinedOutput(); err != nil || !strings.Contains(string(out), "(shutdown)") {
		t.Fatalf("shut off how: %s %v", out, err)
	}
	if err := d.Start(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	if got := run("cat /data/proof"); strings.TrimSpace(got) != "kept" {
		t.Fatalf("after restart: %q", got)
	}

	// Suspended, the guest does not answer SSH; resumed, it does again.
	if err := d.Suspend(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != hypervisor.StatePaused {
		t.Fatalf("after suspend: %s", s)
	}
	sctx, scancel := context.WithTimeout(ctx, 4*time.Second)
	if _, err := guest.Run(sctx, sshAddr, "admin", "admin", "true"); err == nil {
		t.Fatal("a suspended guest answered SSH")
	}
	scancel()
	if err := d.Resume(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	run("true")

	// Revert: a fresh disk.
	if err := d.Revert(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got := run("cat /data/proof 2>&1 || echo gone"); !strings.Contains(got, "gone") {
		t.Fatalf("after revert the file is still there: %q", got)
	}

	if err := d.Delete(ctx, spec.Name); err != nil {
		t.Fatal(err)
	}
	if s := state(); s != "" {
		t.Fatalf("after delete: %s", s)
	}
	if err := d.Start(ctx, spec.Name); !errors.Is(err, hypervisor.ErrNotFound) {
		t.Fatalf("start after delete: %v", err)
	}
}

func TestLibvirt_taken_port_fails_create(t *testing.T) {
	d, image := newDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	spec := hypervisor.Spec{
		Name: hypervisor.DomainName(peerOf(d), "ns", "vm2"), CPU: 1, MemoryMiB: 128,
		BaseImage: image, BaseFormat: "qcow2", ListenAddr: "127.0.0.1", VNCPort: guest.FreePort(t, "127.0.0.1"),
		Forwards: []hypervisor.Forward{{HostPort: taken, GuestPort: 22}},
	}
	t.Cleanup(func() { _ = d.Delete(context.Background(), spec.Name) })
	if err := d.Create(ctx, spec); err == nil {
		t.Fatal("created a domain whose forward port is taken")
	}
}

func TestDomainName_unique_per_peer(t *testing.T) {
	cases := []struct{ peer, ns, vm, want string }{
		{"peer-1", "svc-default", "web", "svc.peer-1.svc-default.web"},
		{"a", "b-c", "d", "svc.a.b-c.d"},
		{"a-b", "c", "d", "svc.a-b.c.d"},
	}
	for _, c := range cases {
		if got := hypervisor.DomainName(c.peer, c.ns, c.vm); got != c.want {
			t.Fatalf("DomainName(%q,%q,%q) = %q", c.peer, c.ns, c.vm, got)
		}
	}
}

func TestLibvirt_iso_is_a_cdrom(t *testing.T) {
	d, image := newDriver(t)
	if _, err := exec.LookPath("genisoimage"); err != nil {
		t.Fatal("genisoimage missing: run scripts/install-deps.sh")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("from the iso\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	iso := filepath.Join(t.TempDir(), "test.iso")
	if out, err := exec.Command("genisoimage", "-quiet", "-V", "SVCTEST", "-o", iso, dir).CombinedOutput(); err != nil {
		t.Fatalf("genisoimage: %v %s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sshPort := guest.FreePort(t, "127.0.0.1")
	spec := hypervisor.Spec{
		Name: hypervisor.DomainName(peerOf(d), "ns", "iso"), CPU: 1, MemoryMiB: 256, BaseImage: image, BaseFormat: "qcow2",
		ISO: iso, ListenAddr: "127.0.0.1", VNCPort: guest.FreePort(t, "127.0.0.1"),
		Forwards: []hypervisor.Forward{{HostPort: sshPort, GuestPort: 22}},
	}
	t.Cleanup(func() { _ = d.Delete(context.Background(), spec.Name) })
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	// The guest sees a CD-ROM drive holding the ISO (its size in 512-byte sectors).
	out, err := guest.WaitRun(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(sshPort)), "admin", "admin", "cat /sys/block/sr0/size")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(iso)
	if got, _ := strconv.ParseInt(strings.TrimSpace(out), 10, 64); got != st.Size()/512 {
		t.Fatalf("sr0 holds %s sectors, the ISO has %d", strings.TrimSpace(out), st.Size()/512)
	}
}

// peerOf is the peer name d's domains are under (its prefix's).
func peerOf(d *libvirt.Driver) string {
	return strings.TrimSuffix(strings.TrimPrefix(d.Config().Prefix, "svc."), ".")
}
