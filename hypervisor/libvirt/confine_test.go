package libvirt_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/libvirt"
	"github.com/svc-project/svc/testkit/disktest"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/peerclaim"
)

// qemuUID returns the real user id of the QEMU process of a domain.
func qemuUID(t *testing.T, domain string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), "guest="+domain+",") {
			continue
		}
		status, err := os.ReadFile(filepath.Join(filepath.Dir(p), "status"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[0] == "Uid:" {
				uid, _ := strconv.Atoi(f[1])
				return uid
			}
		}
	}
	t.Fatalf("no QEMU process of %s", domain)
	return -1
}

func owner(t *testing.T, path string) (uid int, mode os.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid), fi.Mode().Perm()
}

// QEMU runs as the unprivileged user, whatever qemu.conf says; the files
// of a VM are that user's or root's alone.
func TestLibvirt_qemu_runs_unprivileged(t *testing.T) {
	d, image := newDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const addr = "127.0.0.1"
	spec := hypervisor.Spec{
		Name: hypervisor.DomainName(peerOf(d), "ns", "unpriv"), CPU: 1, MemoryMiB: 128,
		BaseImage: image, BaseFormat: "qcow2", ListenAddr: addr, VNCPort: guest.FreePort(t, addr), VNCPassword: "pw-8k2m",
	}
	t.Cleanup(func() { _ = d.Delete(context.Background(), spec.Name) })
	if err := d.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	uid := qemuUID(t, spec.Name)
	if uid == 0 {
		t.Fatal("QEMU runs as root")
	}
	if d.QEMUUser() == "" {
		t.Fatal("the driver names no QEMU user")
	}
	if u, mode := owner(t, d.DiskPath(spec.Name)); (u != uid && u != 0) || mode&0o077 != 0 {
		t.Fatalf("the overlay is owned by %d with mode %s", u, mode)
	}
	secret := strings.TrimSuffix(d.DiskPath(spec.Name), ".qcow2") + ".vnc-secret"
	if u, mode := owner(t, secret); u != uid || mode&0o077 != 0 {
		t.Fatalf("the VNC secret is owned by %d with mode %s", u, mode)
	}
}

// A base image whose header names a host file is refused before QEMU (or
// qemu-img) opens it: no overlay, no domain.
func TestLibvirt_refuses_a_base_that_names_a_host_file(t *testing.T) {
	d, _ := newDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cases := []struct {
		name, want string
		base       []byte
	}{
		{"data file", "external data file", disktest.WithDataFile(t, "/etc/passwd")},
		{"backing file", "backing file", disktest.WithBacking(t, "/etc/passwd", "raw")},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := hypervisor.Spec{
				Name: hypervisor.DomainName(peerOf(d), "ns", "hostile"+strconv.Itoa(i)), CPU: 1, MemoryMiB: 128,
				BaseImage: disktest.Write(t, "base", c.base), BaseFormat: "qcow2", ListenAddr: "127.0.0.1", VNCPort: guest.FreePort(t, "127.0.0.1"),
			}
			t.Cleanup(func() { _ = d.Delete(context.Background(), spec.Name) })
			err := d.Create(ctx, spec)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Create = %v, want a refusal naming the %s", err, c.want)
			}
			if _, err := os.Stat(d.DiskPath(spec.Name)); !os.IsNotExist(err) {
				t.Fatalf("an overlay was made: %v", err)
			}
			doms, err := d.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, dom := range doms {
				if dom.Name == spec.Name {
					t.Fatal("the domain was defined")
				}
			}
		})
	}
}

// Probe says so when QEMU's user cannot reach the VMs' disks.
func TestLibvirt_probe_names_an_unreachable_dir(t *testing.T) {
	guest.RequireLibvirt(t)
	private := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(private, "data")
	peerclaim.For(t, peerclaim.Peer("hvconfine"))
	d, err := libvirt.New(libvirt.Config{Dir: filepath.Join(hidden, "vms"), Prefix: hypervisor.DomainPrefix("hvconfine")})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.Probe(ctx); err == nil || !strings.Contains(err.Error(), "cannot search") {
		t.Fatalf("Probe = %v", err)
	}
	if err := os.Chmod(private, 0o711); err != nil {
		t.Fatal(err)
	}
	if err := d.Probe(ctx); err != nil {
		t.Fatalf("Probe after chmod: %v", err)
	}
}
