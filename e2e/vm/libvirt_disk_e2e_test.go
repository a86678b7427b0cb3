package vm

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// smallDisk mounts a fresh ext4 file system of size bytes (a loop device
// over a sparse file) that QEMU's user may search, unmounted when the test
// ends (after the cluster on it has stopped).
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounts a file system: needs root")
	}
	base := guest.TempDir(t)
	img, mnt := filepath.Join(base, "disk.img"), filepath.Join(base, "mnt")
	f, err := os.Create(img)
	if err == nil {
		err = errors.Join(f.Truncate(size), f.Close())
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(mnt, 0o711); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"mkfs.ext4", "-q", "-F", "-m", "0", img}, {"mount", "-o", "loop", img, mnt}, {"chmod", "0711", mnt}} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", cmd, err, out)
		}
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt
}

// zeros is a reader of n zero bytes.
func zeros(n int64) io.Reader { return io.LimitReader(zeroReader{}, n) }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestLibvirtCluster_disk_floor: a peer whose data dir is a 3 GiB disk is
// filled by every way a user can: uploads (of a known length and of an
// unknown one), a registry pull, a shared folder and a guest writing into
// it, a resize, a save. Before, a shared folder's bound was checked against
// the free space only when it was made, and a guest filling it filled the
// disk under Raft's log: every write was 503 after. Now every bound is
// reserved together with a floor kept free: each refusal is a 409 or 413
// that says what is free, kept and promised, nothing is half-written, Raft
// answers writes throughout, and what was recorded is all still there.
func TestLibvirtCluster_disk_floor(t *testing.T) {
	image := guest.RequireLibvirt(t)
	const mib, gib = 1 << 20, 1 << 30
	dir := smallDisk(t, 3*gib)
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "diskfloor", Subnet: 61, Dir: dir})
	m := c.Members[0]
	cl := c.Client(m)
	kit.Upload(t, cl, "mini-linux", image)
	room := func() int64 { return int64(kit.Metric(t, m, "svc_disk_room_bytes")) }
	free := func() int64 {
		f, err := diskbudget.FreeBytes(dir)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	refused := func(what string, err error, codes ...int) {
		t.Helper()
		code := api.CodeOf(err)
		for _, want := range codes {
			// refused by the peer (what is free, kept and promised) or,
			// for a VM, by placement (the room the node reports)
			if code == want && (strings.Contains(err.Error(), "no room on its disk") && strings.Contains(err.Error(), "kept free") ||
				strings.Contains(err.Error(), "not enough room on its disk")) {
				t.Logf("%s: %v", what, err)
				return
			}
		}
		t.Fatalf("%s: %v, want %v saying there is no room", what, err, codes)
	}
	raftWrites := func(step string) {
		t.Helper()
		tag := "after-" + strings.ReplaceAll(step, " ", "-")
		if _, err := cl.TagNode(kit.Ctx(t), kit.NS, m.Name, tag); err != nil {
			t.Fatalf("a write after %s: %v", step, err)
		}
	}
	t.Logf("a 3 GiB data disk: %d MiB free, %d MiB of room above the floor", free()/mib, room()/mib)

	long := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		t.Cleanup(cancel)
		return c
	}

	// uploads: of a known length, refused before a byte is read; one that
	// fits
	_, err := cl.UploadImage(kit.Ctx(t), kit.NS, "big", zeros(room()+256*mib), room()+256*mib)
	refused("an upload of a known length over the room", err, http.StatusRequestEntityTooLarge)
	kept := make([]byte, 64*mib)
	_, _ = rand.Read(kept)
	if _, err := cl.UploadImage(kit.Ctx(t), kit.NS, "kept", bytes.NewReader(kept), int64(len(kept))); err != nil {
		t.Fatal(err)
	}
	if left := kit.Leftovers(m); len(left) != 0 {
		t.Fatalf("the refused uploads left %v", left)
	}
	raftWrites("uploads")

	// a shared folder over the room is refused at the VM's start; one
	// that fits is made
	if _, err := cl.SetSharedStorage(kit.Ctx(t), kit.NS, room()+512*mib); err != nil {
		t.Fatal(err)
	}
	_, err = cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "mini-linux", Name: "too-big", CPU: kit.Intp(1), Memory: kit.Floatp(0.25), SharedStorage: kit.Boolp(true), Timeout: kit.Floatp(3)})
	refused("a shared folder over the room", err, http.StatusConflict)
	_ = cl.DeleteVM(kit.Ctx(t), kit.NS, "too-big")
	const folder = gib // the least a folder may be
	if _, err := cl.SetSharedStorage(kit.Ctx(t), kit.NS, folder); err != nil {
		t.Fatal(err)
	}
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "mini-linux", Name: "filler", CPU: kit.Intp(1), Memory: kit.Floatp(0.25), SharedStorage: kit.Boolp(true), Timeout: kit.Floatp(3)})
	if err != nil {
		t.Fatal(err)
	}
	kit.GuestRun(t, c, vm, "true")
	// most of the rest goes to an image
	ballast := room() - 200*mib
	start := time.Now()
	if _, err := cl.UploadImage(long(), kit.NS, "ballast", zeros(ballast), ballast); err != nil {
		t.Fatal(err)
	}
	t.Logf("with the folder promised and a ballast of %d MiB (uploaded in %s): %d MiB free, %d MiB of room", ballast/mib, time.Since(start).Round(time.Second), free()/mib, room()/mib)
	// an upload of an unknown length is refused as it passes the room
	_, err = cl.UploadImage(long(), kit.NS, "big", zeros(room()+256*mib), -1)
	refused("an upload of an unknown length over the room", err, http.StatusRequestEntityTooLarge)
	if left := kit.Leftovers(m); len(left) != 0 {
		t.Fatalf("the refused upload left %v", left)
	}

	// a registry pull of more than the room is refused; a resize too
	disk := make([]byte, room()+128*mib)
	_, _ = rand.Read(disk)
	if _, err := cl.SetRegistryCredential(kit.Ctx(t), kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	kit.PushDisk(t, reg, reg.Host+"/big/disk:v1", disk)
	_, err = cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: reg.Host + "/big/disk:v1", Name: "pulled", CPU: kit.Intp(1), Memory: kit.Floatp(0.25), Timeout: kit.Floatp(3)})
	refused("a pull over the room", err, http.StatusConflict)
	_ = cl.DeleteVM(kit.Ctx(t), kit.NS, "pulled")
	if _, err := cl.SetRemoteCatalogs(kit.Ctx(t), []string{reg.Host + "/big/disk"}); err != nil {
		t.Fatal(err)
	}
	acc, err := cl.PullRemoteImage(kit.Ctx(t), kit.NS, "disk-v1", "pulled")
	if err != nil {
		t.Fatal(err)
	}
	if j := kit.WaitJob(t, c, cl, acc.JobName); j.State != "Failed" || !strings.Contains(j.Message, "no room") || !strings.Contains(j.Message, "kept free") {
		t.Fatalf("a catalog pull over the room: %+v", j)
	} else {
		t.Logf("a catalog pull over the room: %s", j.Message)
	}
	_, err = cl.ResizeVM(kit.Ctx(t), kit.NS, "filler", api.FormatSize(room()+gib))
	refused("a resize over the room", err, http.StatusConflict)
	raftWrites("the pull and the resize")

	// the guest writes past its folder's bound while an upload of an
	// unknown length runs beside it: the folder is full, the upload is
	// refused as it passes the room, the disk keeps its floor
	type result struct {
		what string
		err  error
	}
	done := make(chan result, 2)
	fillStart := time.Now()
	go func() { // no t.Fatal here: the test waits on done
		out, err := runScript(cl, kit.NS, "filler", fmt.Sprintf("dd if=/dev/zero of=/shared/fill bs=1M count=%d 2>&1; echo exit=$?", folder/mib+100))
		if err != nil {
			done <- result{"the guest", err}
			return
		}
		if !strings.Contains(out.Stdout, "No space left on device") || strings.Contains(out.Stdout, "exit=0") {
			done <- result{"the guest", fmt.Errorf("past the folder's bound: %+v", out)}
			return
		}
		done <- result{"the guest", nil}
	}()
	roomBefore := room()
	go func() {
		_, err := cl.UploadImage(long(), kit.NS, "late", zeros(gib), -1)
		if api.CodeOf(err) != http.StatusRequestEntityTooLarge {
			err = fmt.Errorf("an upload of 1 GiB with %d MiB of room before the fill: %v, want 413", roomBefore/mib, err)
		} else {
			err = nil
		}
		done <- result{"an upload", err}
	}()
	fill := time.NewTimer(scriptRunWait + time.Minute) // both are bounded by less
	defer fill.Stop()
	for range 2 {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("%s: %v", r.what, r.err)
			}
		case <-fill.C:
			t.Fatal("the fill and the upload beside it did not end")
		}
	}
	t.Logf("the guest filled its folder beside the refused upload in %s", time.Since(fillStart).Round(time.Second))
	raftWrites("the fill")

	// a save of the VM's disk takes room as it writes
	if _, err := cl.SaveVM(kit.Ctx(t), kit.NS, "filler", api.SaveRequest{ImageName: "filler-saved"}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the save done", kit.ImageOpWait, func() error {
		img, err := cl.GetImage(kit.Ctx(t), kit.NS, "filler-saved")
		if err != nil || img.State != "Ready" {
			return fmt.Errorf("%+v %v", img, err)
		}
		return nil
	})
	if f := free(); f < diskbudget.DefaultFloor-64*mib {
		t.Fatalf("the disk has %d MiB free, under its floor", f/mib)
	}
	raftWrites("the fill")

	// nothing recorded was lost
	body, _, _, err := cl.DownloadImage(kit.Ctx(t), kit.NS, "kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(body)
	body.Close()
	if !bytes.Equal(got, kept) {
		t.Fatal("the image uploaded before the fill changed")
	}
	if img, err := cl.GetImage(kit.Ctx(t), kit.NS, "ballast"); err != nil || img.State != "Ready" {
		t.Fatalf("the ballast: %+v %v", img, err)
	}
	nodes, err := cl.ListNodes(kit.Ctx(t), kit.NS, true)
	if err != nil || len(nodes) != 1 || !strings.Contains(strings.Join(nodes[0].Tags, ","), "after-the-fill") {
		t.Fatalf("a consistent read after the fill: %+v %v", nodes, err)
	}
}
