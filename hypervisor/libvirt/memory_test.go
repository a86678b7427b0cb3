package libvirt_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/libvirt"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/peerclaim"
)

// A guest saved to a memory file and restored from it runs on where it
// was: the same boot (its boot id), not a new one.
func TestLibvirt_memory_snapshot(t *testing.T) {
	d, image := realDriver(t, "hvmemory")
	ctx, cancel := context.WithTimeout(context.Background(), 3*hypervisor.BootTimeout) // a few boots, each within its bound
	defer cancel()
	const addr = "127.0.0.1"
	sshPort := guest.FreePort(t, addr)
	spec := hypervisor.Spec{
		Name: hypervisor.DomainName(peerOf(d), "ns", "mem"), CPU: 1, MemoryMiB: 256,
		BaseImage: image, BaseFormat: "qcow2", ListenAddr: addr, VNCPort: guest.FreePort(t, addr), VNCPassword: "pw-m3m0",
		Forwards: []hypervisor.Forward{{HostPort: sshPort, GuestPort: 22}},
	}
	t.Cleanup(func() { _ = d.Delete(context.Background(), spec.Name) })
	sshAddr := net.JoinHostPort(addr, strconv.Itoa(sshPort))
	bootID := func() string {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, hypervisor.BootTimeout)
		defer cancel()
		out, err := guest.WaitRun(wctx, sshAddr, "admin", "admin", "cat /proc/sys/kernel/random/boot_id")
		if err != nil {
			log, _ := d.ConsoleLog(spec.Name)
			t.Fatalf("%v\nconsole:\n%s", err, log)
		}
		return strings.TrimSpace(out)
	}
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	before := bootID()

	mem := filepath.Join(filepath.Dir(d.MemoryPath(spec.Name)), "mem.state")
	if err := d.SaveMemory(ctx, spec.Name, filepath.Join(t.TempDir(), "elsewhere")); err == nil {
		t.Fatal("a memory file outside the VM directory was taken")
	}
	start := time.Now()
	if err := d.SaveMemory(ctx, spec.Name, mem); err != nil {
		t.Fatal(err)
	}
	saved := time.Since(start)
	if doms, err := d.List(ctx); err != nil || !hasState(doms, spec.Name, hypervisor.StateShutoff) {
		t.Fatalf("after the save: %+v %v", doms, err)
	}
	if err := d.SaveMemory(ctx, spec.Name, mem); !errors.Is(err, os.ErrExist) {
		t.Fatalf("a second save over the file: %v", err)
	}
	start = time.Now()
	if err := d.RestoreMemory(ctx, mem); err != nil {
		t.Fatal(err)
	}
	restored := time.Since(start)
	if after := bootID(); after != before {
		t.Fatalf("boot id %s after the restore, %s before: the guest booted again", after, before)
	}
	fi, _ := os.Stat(mem)
	t.Logf("256 MiB guest: saved in %v, restored in %v, memory file %d MiB", saved.Round(time.Millisecond), restored.Round(time.Millisecond), fi.Size()>>20)
}

func hasState(doms []hypervisor.Domain, name string, st hypervisor.State) bool {
	for _, d := range doms {
		if d.Name == name {
			return d.State == st
		}
	}
	return false
}

// realDriver is a libvirt driver for the domains of peer, in a directory of
// the test's own, and the mini-linux image (the test is skipped without
// libvirtd, unless SVC_REQUIRE_LIBVIRT).
func realDriver(t *testing.T, peer string) (*libvirt.Driver, string) {
	t.Helper()
	peerclaim.For(t, peerclaim.Peer(peer))
	d, err := libvirt.New(libvirt.Config{Dir: guest.TempDir(t), Prefix: hypervisor.DomainPrefix(peer)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, guest.RequireLibvirt(t)
}
