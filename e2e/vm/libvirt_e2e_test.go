package vm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/poll"
	"github.com/svc-project/svc/testkit/testcluster"
)

// waitGuestAgent waits until the guest's agent has told the VM record what
// the guest is and its address, and the image's identity step, run through
// it, is set; on failure it shows the guest's console.
func waitGuestAgent(t *testing.T, c *testcluster.Cluster, vm api.VM) {
	t.Helper()
	cl := c.Client(c.Members[0])
	err := poll.Until(context.Background(), kit.GuestBootWait, func() error {
		got, err := cl.GetVM(kit.Ctx(t), vm.Namespace, vm.Name)
		if err != nil || !got.GuestAgent || !strings.Contains(got.GuestOS, "mini-linux") || !slices.Contains(got.GuestIPs, "10.0.2.15") ||
			got.Identity == nil || got.Identity.State != api.IdentitySet {
			return fmt.Errorf("%v %q %v %+v (%v)", got.GuestAgent, got.GuestOS, got.GuestIPs, got.Identity, err)
		}
		return nil
	})
	if err == nil {
		return
	}
	kit.ShowConsole(t, c, vm)
	t.Fatalf("waiting for the guest agent in the VM record: %v", err)
}

func TestLibvirtCluster_vm_lifecycle(t *testing.T) {
	c, _ := kit.LibvirtCluster(t, "lvpair", 20)
	a := c.Members[0]
	cl := c.Client(a)
	before := kit.NodeByName(t, cl, a.Name)
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "mini-linux", Name: "e2e", Node: a.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.25), Timeout: kit.Floatp(3)})
	if err != nil {
		t.Fatal(err)
	}
	if vm.Status != api.StatusRunning || vm.IP != "127.0.20.1" {
		t.Fatalf("deployed %+v", vm)
	}
	// The guest's agent tells the VM record what the guest is and its
	// address, and the image's identity step, run through it, named the
	// guest after its VM.
	waitGuestAgent(t, c, vm)
	if got := kit.GuestRun(t, c, vm, "uname -n"); strings.TrimSpace(got) != "e2e" {
		t.Fatalf("uname -n: %q", got)
	}
	// The screen opens with the VM's own password only.
	vncAddr := net.JoinHostPort(vm.IP, strconv.Itoa(vm.VNC))
	if types, err := rfb.Authenticate(vncAddr, vm.VNCPassword, 10*time.Second); err != nil || vm.VNCPassword == "" || slices.Contains(types, rfb.SecurityNone) {
		t.Fatalf("VNC with the VM's password %q: types %v, %v", vm.VNCPassword, types, err)
	}
	if _, err := rfb.Authenticate(vncAddr, "guessed!", 10*time.Second); !errors.Is(err, rfb.ErrAuthFailed) {
		t.Fatalf("VNC with another password: %v", err)
	}
	kit.GuestRun(t, c, vm, "echo kept > /data/proof && sync")

	exec := func(action, want string) {
		t.Helper()
		got, err := cl.ExecVM(kit.Ctx(t), kit.NS, "e2e", action)
		if err != nil || got.Status != want {
			t.Fatalf("%s: %+v %v", action, got, err)
		}
	}
	exec("stop", api.StatusStopped)
	exec("start", api.StatusRunning)
	if got := kit.GuestRun(t, c, vm, "cat /data/proof"); strings.TrimSpace(got) != "kept" {
		t.Fatalf("after stop/start: %q", got)
	}
	exec("suspend", api.StatusSuspended)
	sctx, scancel := context.WithTimeout(context.Background(), 4*time.Second)
	if _, err := guest.Run(sctx, kit.SSHAddr(vm), "admin", "admin", "true"); err == nil {
		t.Fatal("a suspended VM answered SSH")
	}
	scancel()
	exec("resume", api.StatusRunning)
	kit.GuestRun(t, c, vm, "true")
	exec("revert", api.StatusRunning)
	if got := kit.GuestRun(t, c, vm, "cat /data/proof 2>&1 || echo gone"); !strings.Contains(got, "gone") {
		t.Fatalf("after revert: %q", got)
	}

	// A domain removed behind the peer's back (destroyed and undefined, its
	// disk left) is recreated on its own disk.
	dom := hypervisor.DomainName(a.Name, kit.NS, "e2e")
	kit.GuestRun(t, c, vm, "echo kept > /data/proof && sync")
	for _, args := range [][]string{{"undefine", dom}, {"destroy", dom}} { // undefined first: the destroy then removes it at once
		if out, err := osexec.Command("virsh", append([]string{"-c", "qemu:///system"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("virsh %v: %v %s", args, err, out)
		}
	}
	c.WaitFor("the domain recreated", 60*time.Second, func() error {
		got, err := cl.GetVM(kit.Ctx(t), kit.NS, "e2e")
		if err != nil || got.Status != api.StatusRunning || !strings.Contains(got.ErrorMessage, "recreated") {
			return fmt.Errorf("%+v %v", got, err)
		}
		return nil
	})
	if got := kit.GuestRun(t, c, vm, "cat /data/proof"); strings.TrimSpace(got) != "kept" {
		t.Fatalf("the recreated domain has not its disk: %q", got)
	}

	// A stopped VM whose disk is gone starts on a fresh one; it is not left
	// Failed.
	exec("stop", api.StatusStopped)
	if err := os.Remove(a.Libvirt.DiskPath(dom)); err != nil {
		t.Fatal(err)
	}
	exec("start", api.StatusRunning)
	if got := kit.GuestRun(t, c, vm, "cat /data/proof 2>&1 || echo gone"); !strings.Contains(got, "gone") {
		t.Fatalf("after its disk was made again: %q", got)
	}
	if got, _ := cl.GetVM(kit.Ctx(t), kit.NS, "e2e"); !strings.Contains(got.ErrorMessage, "disk was missing") {
		t.Fatalf("the VM does not say its disk was made again: %+v", got)
	}

	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, "e2e"); err != nil {
		t.Fatal(err)
	}
	if n := kit.NodeByName(t, cl, a.Name); n.AvailableCPU != before.AvailableCPU || n.AvailableMemory != before.AvailableMemory {
		t.Fatalf("resources not freed: %+v, before %+v", n, before)
	}
	c.WaitFor("the domain and its disk removed", 60*time.Second, func() error {
		doms, err := a.Libvirt.List(kit.Ctx(t))
		if err != nil {
			return err
		}
		if len(doms) != 0 {
			return fmt.Errorf("domains %v", doms)
		}
		if _, err := os.Stat(a.Libvirt.DiskPath(dom)); !os.IsNotExist(err) {
			return fmt.Errorf("disk still there: %v", err)
		}
		return nil
	})
}

func TestLibvirtCluster_vmconfig_and_image_streaming(t *testing.T) {
	c, _ := kit.LibvirtCluster(t, "lvpair", 20)
	a, b := c.Members[0], c.Members[1]
	cl := c.Client(a)
	// legacyIO: emulated IDE disk (and e1000 NIC, which mini-linux has no
	// driver for): the guest boots from its disk. It is deployed first
	// because its boot is slow (legacyBootWait) and the rest of the test
	// does not need it.
	legacy, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "mini-linux", Name: "legacy", Node: a.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.25), LegacyIO: kit.Boolp(true), Timeout: kit.Floatp(3)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "tiny", Image: "mini-linux", CPU: 2, Memory: 0.25}); err != nil {
		t.Fatal(err)
	}
	// Pinned to b, which lacks the image: b streams it from a, then boots it.
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{VMConfig: "tiny", CPU: kit.Intp(1), Node: b.Name, Name: "streamed", Timeout: kit.Floatp(3)})
	if err != nil {
		t.Fatal(err)
	}
	if vm.CPU != 1 || vm.Memory != "0.25Gi" || vm.VMConfig != "tiny" || vm.Node != b.Name || vm.IP != "127.0.20.2" {
		t.Fatalf("vm %+v", vm)
	}
	img, _ := a.Peer.FSM().Image(kit.NS, "mini-linux")
	if !b.Peer.Images().Has(img.Digest) {
		t.Fatal("b runs the VM without the image blob")
	}
	// The guest's agent tells the VM record what the guest is and its
	// address, and the image's identity step, run through it, named the
	// guest after its VM.
	waitGuestAgent(t, c, vm)
	if got := kit.GuestRun(t, c, vm, "uname -n"); strings.TrimSpace(got) != "streamed" {
		t.Fatalf("uname -n: %q", got)
	}
	// The legacy guest, deployed first, has booted meanwhile.
	dom := hypervisor.DomainName(a.Name, kit.NS, legacy.Name)
	c.WaitFor("the legacy guest to mount its IDE disk", legacyBootWait, func() error {
		log, _ := a.Libvirt.ConsoleLog(dom)
		if !strings.Contains(string(log), "/dev/sda mounted on /data") {
			return fmt.Errorf("console so far:\n%s", log)
		}
		return nil
	})
}

// legacyBootWait bounds a legacyIO guest's boot from its IDE disk. Under
// QEMU's software emulation the firmware and the boot loader read the
// kernel and initramfs (25 MB) through emulated IDE ports two bytes at a
// time: measured on an idle 2-core machine, mini-linux mounted its disk
// 42 s after QEMU started from IDE, against 11 s from virtio (the same
// kernel handed to QEMU directly boots from IDE in 8 s), and 75 s through
// libvirt beside the test's peers. A loaded CI machine can double that.
const legacyBootWait = 4 * time.Minute
