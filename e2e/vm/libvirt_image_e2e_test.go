package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/poll"
	"github.com/svc-project/svc/testkit/testcluster"
)

// waitImageOp waits until image name is Ready after a commit or save of
// vm: a Failed image ends the wait at once with its message, and a wait
// that runs out shows what the VM's console said.
func waitImageOp(t *testing.T, c *testcluster.Cluster, cl *api.Client, name string, vm api.VM) api.Image {
	t.Helper()
	var img api.Image
	err := poll.Until(context.Background(), kit.ImageOpWait, func() error {
		var err error
		if img, err = cl.GetImage(kit.Ctx(t), kit.NS, name); err != nil {
			return err
		}
		switch img.State {
		case api.ImageReady:
			return nil
		case api.ImageFailed:
			kit.ShowConsole(t, c, vm)
			t.Fatalf("image %s failed: %s", name, img.ErrorMessage)
		}
		return fmt.Errorf("image %s is %s (%s)", name, img.State, img.ErrorMessage)
	})
	if err != nil {
		kit.ShowConsole(t, c, vm)
		t.Fatalf("waiting for image %s after an operation on %s: %v", name, vm.Name, err)
	}
	return img
}

// vmDigest is the digest of the image content the VM's disk is based on.
func vmDigest(t *testing.T, m *testcluster.Member, name string) string {
	t.Helper()
	vm, ok := m.Peer.FSM().VM(kit.NS, name)
	if !ok {
		t.Fatalf("no vm %s on %s", name, m.Name)
	}
	return vm.ImageDigest
}

// uptime is how long the guest has run, in seconds.
func uptime(t *testing.T, c *testcluster.Cluster, vm api.VM) int {
	t.Helper()
	out := kit.GuestRun(t, c, vm, "cut -d. -f1 /proc/uptime")
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("uptime %q: %v", out, err)
	}
	return n
}

// The spec's flow on real VMs: write a file, commit, deploy again from the
// image name and a VM config on it: the file is there; a VM on the old
// content keeps it, runs on and reverts to it.
func TestLibvirtCluster_commit(t *testing.T) {
	c, _ := kit.LibvirtCluster(t, "lvpair", 20)
	a, b := c.Members[0], c.Members[1]
	cl := c.Client(a)
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "cfg", Image: "mini-linux", CPU: 1, Memory: 0.25}); err != nil {
		t.Fatal(err)
	}
	old := kit.RealDeploy(t, c, api.DeployRequest{Image: "mini-linux", Name: "old", Node: b.Name})
	src := kit.RealDeploy(t, c, api.DeployRequest{VMConfig: "cfg", Name: "src", Node: a.Name})
	before, _ := cl.GetImage(kit.Ctx(t), kit.NS, "mini-linux")
	kit.GuestRun(t, c, src, "echo committed > /data/proof && sync")

	start := time.Now()
	st, err := cl.CommitVM(kit.Ctx(t), kit.NS, "src", api.CommitRequest{})
	if err != nil || st.StatusURL != "/api/v1/namespaces/"+kit.NS+"/images/mini-linux" {
		t.Fatalf("commit: %+v %v", st, err)
	}
	after := waitImageOp(t, c, cl, "mini-linux", src)
	if after.Digest == before.Digest {
		t.Fatalf("commit left the digest at %s", after.Digest)
	}
	// The VM restarted on the result and keeps its file.
	if got := kit.GuestRun(t, c, src, "cat /data/proof"); strings.TrimSpace(got) != "committed" {
		t.Fatalf("src after commit: %q", got)
	}
	if up := uptime(t, c, src); time.Duration(up)*time.Second > time.Since(start) {
		t.Fatalf("src has run %ds: it was not restarted by the commit %s ago", up, time.Since(start))
	}

	// A VM on the old content keeps running on it, and reverts to it.
	if d := vmDigest(t, b, "old"); d != before.Digest {
		t.Fatalf("old now on %s, deployed on %s", d, before.Digest)
	}
	if got := kit.GuestRun(t, c, old, "cat /data/proof 2>&1 || echo absent"); !strings.Contains(got, "absent") {
		t.Fatalf("old sees the commit: %q", got)
	}
	if vm, err := cl.ExecVM(kit.Ctx(t), kit.NS, "old", "revert"); err != nil || vm.Status != api.StatusRunning {
		t.Fatalf("revert old: %+v %v", vm, err)
	}
	if got := kit.GuestRun(t, c, old, "cat /data/proof 2>&1 || echo absent"); !strings.Contains(got, "absent") {
		t.Fatalf("old after revert: %q", got)
	}
	if d := vmDigest(t, b, "old"); d != before.Digest {
		t.Fatalf("old reverted onto %s, deployed on %s", d, before.Digest)
	}
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, "old"); err != nil {
		t.Fatal(err)
	}

	// New deploys, by image name on another peer and by VM config, start in
	// the committed state.
	for _, req := range []api.DeployRequest{
		{Image: "mini-linux", Name: "by-image", Node: b.Name},
		{VMConfig: "cfg", Name: "by-config", Node: b.Name},
	} {
		vm := kit.RealDeploy(t, c, req)
		if got := kit.GuestRun(t, c, vm, "cat /data/proof"); strings.TrimSpace(got) != "committed" {
			t.Fatalf("%s: %q", vm.Name, got)
		}
		if err := cl.DeleteVM(kit.Ctx(t), kit.NS, vm.Name); err != nil {
			t.Fatal(err)
		}
	}
}

// Save makes a new image (sourceType vm) that deploys with the file; the VM
// restarted and still runs; the saved name cannot be taken twice.
func TestLibvirtCluster_save(t *testing.T) {
	c, _ := kit.LibvirtCluster(t, "lvpair", 20)
	a, b := c.Members[0], c.Members[1]
	cl := c.Client(a)
	src := kit.RealDeploy(t, c, api.DeployRequest{Image: "mini-linux", Name: "src", Node: a.Name})
	kit.GuestRun(t, c, src, "echo saved > /data/proof && sync")
	start := time.Now()
	desc := "src with a proof"
	if _, err := cl.SaveVM(kit.Ctx(t), kit.NS, "src", api.SaveRequest{ImageName: "mini-saved", Description: &desc}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SaveVM(kit.Ctx(t), kit.NS, "src", api.SaveRequest{ImageName: "mini-saved"}); api.CodeOf(err) != 409 {
		t.Fatalf("a second save to the same name: %v", err)
	}
	saved := waitImageOp(t, c, cl, "mini-saved", src)
	if saved.SourceType != "vm" || saved.Source != "src" || saved.Description != desc {
		t.Fatalf("saved image %+v", saved)
	}
	if got := kit.GuestRun(t, c, src, "cat /data/proof"); strings.TrimSpace(got) != "saved" {
		t.Fatalf("src after save: %q", got)
	}
	if up := uptime(t, c, src); time.Duration(up)*time.Second > time.Since(start) {
		t.Fatalf("src has run %ds: it was not restarted by the save %s ago", up, time.Since(start))
	}
	vm := kit.RealDeploy(t, c, api.DeployRequest{Image: "mini-saved", Name: "from-saved", Node: b.Name})
	if got := kit.GuestRun(t, c, vm, "cat /data/proof"); strings.TrimSpace(got) != "saved" {
		t.Fatalf("from-saved: %q", got)
	}
	if orig, _ := cl.GetImage(kit.Ctx(t), kit.NS, "mini-linux"); orig.Digest == saved.Digest {
		t.Fatal("save changed the original image")
	}
}

// The ISO path: the installer ISO built from Debian packages boots a VM whose
// disk is a generated empty image; the guest sees the empty disk at its size
// and writes it; save keeps what it wrote, read back in a VM on another peer.
func TestLibvirtCluster_iso_install(t *testing.T) {
	isoPath := guest.RequireISO(t)
	c, _ := kit.LibvirtCluster(t, "lvpair", 20)
	a, b := c.Members[0], c.Members[1]
	cl := c.Client(a)
	f, err := os.Open(isoPath)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	iso, err := cl.UploadISO(kit.Ctx(t), kit.NS, "mini-linux.iso", f, st.Size())
	f.Close()
	if err != nil || iso.State != api.ImageReady {
		t.Fatalf("upload the ISO: %+v %v", iso, err)
	}
	if _, err := cl.GenerateImage(kit.Ctx(t), kit.NS, api.GenerateImageRequest{Name: "blank", Size: "1G"}); err != nil {
		t.Fatal(err)
	}
	const sectors = "2097152" // 1 GiB in 512-byte sectors
	inst := kit.RealDeploy(t, c, api.DeployRequest{Image: "blank", ISO: "mini-linux.iso", Name: "installer", Node: a.Name})
	if got := kit.GuestRun(t, c, inst, "cat /sys/block/vda/size"); strings.TrimSpace(got) != sectors {
		t.Fatalf("the guest sees a disk of %s sectors", got)
	}
	const zeroMiB = "b6d81b360a5672d80c27430f39153e2c" // md5 of 1 MiB of zeros
	if got := kit.GuestRun(t, c, inst, "dd if=/dev/vda bs=1M count=1 2>/dev/null | md5sum"); !strings.HasPrefix(got, zeroMiB) {
		t.Fatalf("the generated disk is not empty: %q", got)
	}
	wrote := kit.GuestRun(t, c, inst, "dd if=/dev/urandom of=/tmp/r bs=1M count=4 2>/dev/null && "+
		"dd if=/tmp/r of=/dev/vda bs=1M seek=1 2>/dev/null && sync && md5sum </tmp/r")
	readBack := "dd if=/dev/vda bs=1M skip=1 count=4 2>/dev/null | md5sum"
	if got := kit.GuestRun(t, c, inst, readBack); got != wrote {
		t.Fatalf("read back %q, wrote %q", got, wrote)
	}

	if _, err := cl.SaveVM(kit.Ctx(t), kit.NS, "installer", api.SaveRequest{ImageName: "installed"}); err != nil {
		t.Fatal(err)
	}
	waitImageOp(t, c, cl, "installed", inst)
	vm := kit.RealDeploy(t, c, api.DeployRequest{Image: "installed", ISO: "mini-linux.iso", Name: "reader", Node: b.Name})
	if got := kit.GuestRun(t, c, vm, "cat /sys/block/vda/size"); strings.TrimSpace(got) != sectors {
		t.Fatalf("the saved disk is %s sectors", got)
	}
	if got := kit.GuestRun(t, c, vm, readBack); got != wrote {
		t.Fatalf("the saved disk holds %q, the installer wrote %q", got, wrote)
	}
	if err := cl.DeleteISO(kit.Ctx(t), kit.NS, "mini-linux.iso"); api.CodeOf(err) != 409 {
		t.Fatalf("deleting an ISO in use: %v", err)
	}
}

// A host that crashes while it writes a commit (its VM shut off, qemu-img at
// work) leaves no half-written image: back, it finishes the commit; the
// image is Ready on content that hashes to its digest, nothing is left in
// staging, and the VM runs again with the committed file.
func TestLibvirtCluster_host_crash_during_commit(t *testing.T) {
	image := guest.RequireLibvirt(t)
	c := testcluster.New(t, 3, testcluster.Options{Libvirt: true, Prefix: "lvcrash", Subnet: 21})
	leader := c.WaitLeader()
	host := c.Followers()[0]
	cl := c.Client(leader)
	orig := kit.Upload(t, cl, "mini-linux", image)
	vm := kit.RealDeploy(t, c, api.DeployRequest{Image: "mini-linux", Name: "w", Node: host.Name})
	kit.GuestRun(t, c, vm, "dd if=/dev/urandom of=/data/blob bs=1M count=32 2>/dev/null && echo committed > /data/proof && sync")
	if _, err := cl.CommitVM(kit.Ctx(t), kit.NS, "w", api.CommitRequest{}); err != nil {
		t.Fatal(err)
	}
	dom := hypervisor.DomainName(host.Name, kit.NS, "w")
	c.WaitFor("the commit to shut the VM off", kit.ImageOpWait, func() error {
		doms, err := host.Libvirt.List(kit.Ctx(t))
		if err != nil {
			return err
		}
		for _, d := range doms {
			if d.Name == dom && d.State == hypervisor.StateShutoff {
				return nil
			}
		}
		return errors.New("the VM still runs")
	})
	c.Crash(host)
	if img, _ := cl.GetImage(kit.Ctx(t), kit.NS, "mini-linux"); img.State != api.ImageUpdating || img.Digest != orig.Digest {
		t.Fatalf("with the host down the image is %+v", img)
	}
	c.Restart(host)
	img := waitImageOp(t, c, cl, "mini-linux", vm)
	if img.Digest == orig.Digest {
		t.Fatal("the commit was not carried out")
	}
	f, err := host.Peer.Images().Open(img.Digest)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	_, _ = io.Copy(h, f)
	f.Close()
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != img.Digest {
		t.Fatalf("the committed blob hashes to %s, not %s", got, img.Digest)
	}
	if tmp, _ := os.ReadDir(filepath.Join(host.DataDir, "images", "tmp")); len(tmp) != 0 {
		t.Fatalf("staging files left: %v", tmp)
	}
	kit.WaitRunning(t, c, cl, "w", hypervisor.BootTimeout)
	if got := kit.GuestRun(t, c, vm, "cat /data/proof"); strings.TrimSpace(got) != "committed" {
		t.Fatalf("after the crash: %q", got)
	}
}
