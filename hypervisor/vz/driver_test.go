package vz

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore/rawdisk"
)

const prefix = "svc.vztest."

type testDriver struct {
	hypervisor.Driver
	cfg        Config
	base       string
	conversion *atomic.Int32
}

// newTestDriver is a driver whose runners are this test binary on fake
// machines, in a short directory (socket paths are bounded).
func newTestDriver(t *testing.T) *testDriver {
	t.Helper()
	t.Setenv(runnerEnv, "1")
	dir, err := os.MkdirTemp("", "vz")
	if err != nil {
		t.Fatal(err)
	}
	td := &testDriver{conversion: new(atomic.Int32)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		doms, _ := td.List(ctx)
		for _, d := range doms {
			_ = td.Delete(ctx, d.Name)
		}
		os.RemoveAll(dir)
	})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	td.base = filepath.Join(dir, "base.img")
	disk := bytes.Repeat([]byte("base image sector\n"), 1<<16)
	if err := os.WriteFile(td.base, disk, 0o600); err != nil {
		t.Fatal(err)
	}
	td.cfg = Config{
		Dir: filepath.Join(dir, "vms"), Prefix: prefix, Runner: []string{exe}, Leases: filepath.Join(dir, "leases"),
		StartTimeout: 30 * time.Second, SaveRestore: true,
		// a stand-in for the qcow2 conversion that counts its runs
		ToRaw: func(ctx context.Context, src, dst string) error {
			td.conversion.Add(1)
			return rawdisk.CopySparse(ctx, src, dst)
		},
	}
	td.Driver = td.restart(t)
	return td
}

// restart is a new driver on the same directory: a peer started again.
func (td *testDriver) restart(t *testing.T) hypervisor.Driver {
	t.Helper()
	d, err := New(td.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (td *testDriver) spec(name, os string) hypervisor.Spec {
	return hypervisor.Spec{Name: prefix + name, CPU: 2, MemoryMiB: 512, BaseImage: td.base, BaseFormat: "qcow2", GuestOS: os, ListenAddr: "127.0.0.1"}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func stateOfVM(t *testing.T, d hypervisor.Driver, name string) hypervisor.State {
	t.Helper()
	doms, err := d.List(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, dom := range doms {
		if dom.Name == name {
			return dom.State
		}
	}
	return "absent"
}

func wantState(t *testing.T, d hypervisor.Driver, name string, want hypervisor.State) {
	t.Helper()
	if got := stateOfVM(t, d, name); got != want {
		t.Fatalf("%s is %s, want %s", name, got, want)
	}
}

func TestDriver_lifecycle(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	s := td.spec("ns.a", "")
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StateRunning)
	log, err := td.Driver.(hypervisor.Console).ConsoleLog(s.Name)
	if err != nil || !strings.Contains(string(log), "booted "+s.Name) {
		t.Fatalf("console log %q, %v", log, err)
	}
	p := td.Driver.(hypervisor.Pauser)
	if err := p.Suspend(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StatePaused)
	if err := p.Resume(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StateRunning)
	disks := td.Driver.(hypervisor.Disks)
	dst := filepath.Join(t.TempDir(), "export.raw")
	if err := disks.Export(ctx, s.Name, dst); err == nil {
		t.Fatal("a running VM's disk was exported")
	}
	// a Linux guest obeys the stop request long before its grace ends
	start := time.Now()
	if err := td.Stop(ctx, s.Name, time.Minute); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("the stop waited out its grace though the guest had stopped")
	}
	wantState(t, td, s.Name, hypervisor.StateShutoff)
	if err := disks.Export(ctx, s.Name, dst); err != nil {
		t.Fatal(err)
	}
	if got, want := mustRead(t, dst), mustRead(t, td.base); !bytes.Equal(got, want) {
		t.Fatal("the exported disk is not the VM's")
	}
	if err := td.Start(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StateRunning)
	// a revert gives the VM its image's disk again, and keeps its MAC
	before, err := readRunnerConfig(filepath.Join(td.cfg.Dir, s.Name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(disks.DiskPath(s.Name), []byte("the VM's changes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := disks.Revert(ctx, s); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StateRunning)
	if got := mustRead(t, disks.DiskPath(s.Name)); !bytes.Equal(got, mustRead(t, td.base)) {
		t.Fatal("the reverted disk is not the image's")
	}
	after, _ := readRunnerConfig(filepath.Join(td.cfg.Dir, s.Name))
	if after.Machine.MAC != before.Machine.MAC {
		t.Fatalf("the revert changed the MAC from %s to %s", before.Machine.MAC, after.Machine.MAC)
	}
	if err := td.Delete(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, "absent")
	if _, err := os.Stat(filepath.Join(td.cfg.Dir, s.Name)); !os.IsNotExist(err) {
		t.Fatal("the deleted VM's directory is there")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDriver_peer_restart_finds_runner(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	s := td.spec("ns.survivor", "")
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	again := td.restart(t)
	wantState(t, again, s.Name, hypervisor.StateRunning)
	if err := again.(hypervisor.Pauser).Suspend(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	wantState(t, again, s.Name, hypervisor.StatePaused)
	if err := again.Stop(ctx, s.Name, time.Second); err != nil {
		t.Fatal(err)
	}
	wantState(t, again, s.Name, hypervisor.StateShutoff)
}

func TestDriver_runner_killed_is_a_stopped_vm(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	s := td.spec("ns.victim", "")
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	r, err := ask(ctx, td.Driver.(memoryDriver).socketPath(s.Name), request{Op: opState})
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(r.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for stateOfVM(t, td, s.Name) != hypervisor.StateShutoff {
		select {
		case <-ctx.Done():
			t.Fatal("the killed runner's VM is not seen as stopped")
		case <-time.After(20 * time.Millisecond):
		}
	}
	// the socket the dead runner left does not keep the VM from starting
	if err := td.Start(ctx, s.Name); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StateRunning)
}

func TestDriver_macos_guest_forced_after_grace(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	s := td.spec("ns.mac", GuestMacOS)
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := td.Stop(ctx, s.Name, time.Second); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StateShutoff)
}

func TestDriver_memory_save_and_restore(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	s := td.spec("ns.saved", "")
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	mem := td.Driver.(hypervisor.MemorySnapshots)
	state := filepath.Join(td.cfg.Dir, s.Name, "memory.state")
	if err := mem.SaveMemory(ctx, s.Name, filepath.Join(t.TempDir(), "elsewhere")); err == nil {
		t.Fatal("a state file outside the VM's directory was written")
	}
	if err := mem.SaveMemory(ctx, s.Name, state); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StateShutoff)
	if err := mem.RestoreMemory(ctx, state); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, s.Name, hypervisor.StateRunning)
	log, _ := td.Driver.(hypervisor.Console).ConsoleLog(s.Name)
	if !strings.Contains(string(log), "restored "+s.Name) {
		t.Fatalf("console log %q: the VM booted instead of restoring", log)
	}
}

func TestDriver_base_converted_once(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	for _, n := range []string{"ns.one", "ns.two"} {
		if err := td.Create(ctx, td.spec(n, "")); err != nil {
			t.Fatal(err)
		}
	}
	if n := td.conversion.Load(); n != 1 {
		t.Fatalf("the qcow2 base was converted %d times for two VMs", n)
	}
}

func TestDriver_start_failure_says_why(t *testing.T) {
	td := newTestDriver(t)
	err := td.Create(ctxT(t), td.spec("ns.unbootable", ""))
	if err == nil || !strings.Contains(err.Error(), "no boot disk") {
		t.Fatalf("err = %v, want the runner's reason", err)
	}
}

func TestDriver_refuses_names_of_other_peers(t *testing.T) {
	td := newTestDriver(t)
	s := td.spec("x", "")
	s.Name = "svc.other.ns.x"
	if err := td.Create(ctxT(t), s); err == nil {
		t.Fatal("a VM of another peer was created")
	}
}

func TestDriver_macos_install_from_restore_image(t *testing.T) {
	td := newTestDriver(t)
	ctx := ctxT(t)
	ipsw := filepath.Join(t.TempDir(), "UniversalMac_15.0_Restore.ipsw")
	if err := os.WriteFile(ipsw, []byte("PK restore image"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := td.spec("ns.installer", GuestMacOS)
	s.ISO = ipsw
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(td.cfg.Dir, s.Name, diskFile)
	if got := string(mustRead(t, disk)); got != "macOS installed from "+ipsw {
		t.Fatalf("disk %q: macOS was not installed from the restore image", got)
	}
	nvram, hw, err := td.Driver.(hypervisor.GuestIdentity).Identity(s.Name)
	if err != nil || string(hw) != "hardware model of "+ipsw || string(mustRead(t, nvram)) != "auxiliary storage" {
		t.Fatalf("identity %q %q %v", nvram, hw, err)
	}
	// started again, the installed system boots: no second install
	if err := td.Stop(ctx, s.Name, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(disk, []byte("the user's files"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := td.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, disk)); got != "the user's files" {
		t.Fatalf("disk %q: installed again", got)
	}
	if _, hw2, _ := td.Driver.(hypervisor.GuestIdentity).Identity(s.Name); !bytes.Equal(hw2, hw) {
		t.Fatalf("hardware model %q after a restart, was %q", hw2, hw)
	}
}

// A template saved once starts another VM: restored (not booted) from the
// template's memory, on a clone of its disk, with a MAC of its own and its
// own forwards and screen; a failed restore leaves nothing of the VM.
func TestDriver_restore_as(t *testing.T) {
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
	vm := td.spec("ns.restored", "")
	vm.VNCPort, vm.VNCPassword, vm.Forwards = 5999, "pw-vm", []hypervisor.Forward{{HostPort: 22022, GuestPort: 22}}
	if err := mem.RestoreAs(ctx, tpl.Name, vm); err != nil {
		t.Fatal(err)
	}
	wantState(t, td, vm.Name, hypervisor.StateRunning)
	log, _ := td.Driver.(hypervisor.Console).ConsoleLog(vm.Name)
	if !strings.Contains(string(log), "restored "+vm.Name) {
		t.Fatalf("console log %q: the VM booted instead of restoring", log)
	}
	from, err := readRunnerConfig(filepath.Join(td.cfg.Dir, tpl.Name))
	if err != nil {
		t.Fatal(err)
	}
	got, err := readRunnerConfig(filepath.Join(td.cfg.Dir, vm.Name))
	if err != nil {
		t.Fatal(err)
	}
	if got.Machine.MAC == from.Machine.MAC || got.Machine.Disk == from.Machine.Disk || got.VNCPassword != "pw-vm" || got.VNCPort != 5999 ||
		len(got.Forwards) != 1 || got.Forwards[0].HostPort != 22022 {
		t.Fatalf("restored VM's config %+v (template's %+v)", got, from)
	}
	if err := os.WriteFile(got.Machine.Disk, []byte("the VM's own"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(from.Machine.Disk); string(b) == "the VM's own" {
		t.Fatal("the VM writes the template's disk")
	}
	if err := mem.RestoreAs(ctx, tpl.Name, vm); err == nil {
		t.Fatal("a restore over an existing VM was taken")
	}
	if err := os.Remove(mem.MemoryPath(tpl.Name)); err != nil {
		t.Fatal(err)
	}
	other := td.spec("ns.other", "")
	if err := mem.RestoreAs(ctx, tpl.Name, other); err == nil {
		t.Fatal("a restore without the template's memory file was taken")
	}
	if _, err := os.Stat(filepath.Join(td.cfg.Dir, other.Name)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed restore left the VM's directory: %v", err)
	}
}
