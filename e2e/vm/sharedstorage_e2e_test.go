package vm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/testcluster"
)

// sharedRun runs a shell script in the VM's guest through the run API (what
// `svc vm run` calls), as root, and returns its result.
func sharedRun(t *testing.T, cl *api.Client, namespace, vm, script string) api.RunResult {
	t.Helper()
	r, err := runScript(cl, namespace, vm, script)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// scriptRunWait bounds a script sharedRun runs in a guest (its
// TimeoutSeconds); the call waits that and the answer's way back.
const scriptRunWait = 5 * time.Minute

// runScript runs script in vm's guest (sh -c), for sharedRun and for a
// goroutine, which must not end its test.
func runScript(cl *api.Client, namespace, vm, script string) (api.RunResult, error) {
	timeout := int(scriptRunWait / time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), scriptRunWait+30*time.Second)
	defer cancel()
	r, err := cl.RunVM(ctx, namespace, vm, api.RunRequest{Command: []string{"sh", "-c", script}, TimeoutSeconds: &timeout})
	if err != nil {
		return r, fmt.Errorf("run %q in %s: %w", script, vm, err)
	}
	return r, nil
}

// Shared storage on real VMs (libvirt, virtio-9p): two VMs of a namespace
// on one node share /shared; a VM of another namespace (a peer of this
// machine dedicated to it) sees its own folder, not theirs; a guest's
// symlinks to /etc and to .. reach no host file; a write past the bound
// fails with "No space left on device"; the folder outlives its VMs; a clear
// is refused while a VM uses it and empties it after; turned off, the
// namespace's folder leaves the host.
func TestLibvirtCluster_shared_storage(t *testing.T) {
	c, image := kit.LibvirtCluster(t, "lvpair", 20)
	a, b := c.Members[0], c.Members[1]
	cl := c.Client(a)
	deploy := func(namespace, name string, on *testcluster.Member) api.VM {
		t.Helper()
		vm, err := cl.DeployVM(kit.Ctx(t), namespace, api.DeployRequest{Image: "mini-linux", Name: name, Node: on.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.25),
			SharedStorage: kit.Boolp(true), Timeout: kit.Floatp(3)})
		if err != nil {
			t.Fatalf("deploy %s: %v", name, err)
		}
		if !vm.SharedStorage {
			t.Fatalf("%s: the record does not say sharedStorage", name)
		}
		kit.GuestRun(t, c, vm, "true") // booted
		if out := sharedRun(t, cl, namespace, name, "grep ' /shared 9p ' /proc/mounts"); out.ExitCode != 0 {
			t.Fatalf("%s has no 9p file system on /shared: %+v", name, out)
		}
		return vm
	}

	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "mini-linux", Name: "early", SharedStorage: kit.Boolp(true)}); api.CodeOf(err) != http.StatusForbidden {
		t.Fatalf("a deploy with shared storage where the namespace has none: %v, want 403", err)
	}
	if _, err := cl.SetSharedStorage(kit.Ctx(t), kit.NS, 1<<30); err != nil {
		t.Fatal(err)
	}
	deploy(kit.NS, "a1", a)
	deploy(kit.NS, "a2", a)
	if out := sharedRun(t, cl, kit.NS, "a1", "echo from-a1 >/shared/hello && ln -s /etc /shared/etc-link && ln -s .. /shared/up"); out.ExitCode != 0 {
		t.Fatalf("a1 writes: %+v", out)
	}
	if out := sharedRun(t, cl, kit.NS, "a2", "cat /shared/hello"); strings.TrimSpace(out.Stdout) != "from-a1" {
		t.Fatalf("a2 reads %+v, want a1's file", out)
	}

	// The symlinks: a guest resolves them itself, inside the guest; on the
	// host they are plain files (mapped access), so nothing follows them
	// out of the folder.
	sharedDir := filepath.Join(a.DataDir, "shared", kit.NS)
	secret := filepath.Join(a.DataDir, "shared", "host-secret")
	if err := os.WriteFile(secret, []byte("HOST-SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := sharedRun(t, cl, kit.NS, "a2", "cat /shared/up/host-secret /shared/up/shared/host-secret /shared/etc-link/../host-secret 2>&1; "+
		"echo @; cat /shared/etc-link/passwd; echo @; cat /etc/passwd")
	t.Logf("a2 through the symlinks: %q", out.Stdout)
	// The link to /etc is the guest's own /etc (its passwd, not the host's).
	parts := strings.Split(out.Stdout, "@\n")
	if strings.Contains(out.Stdout, "HOST-SECRET") || len(parts) != 3 || !strings.Contains(parts[1], "admin:x:1000") || parts[1] != parts[2] {
		t.Fatalf("through the guest's symlinks: %+v", out)
	}
	// The guest's files are QEMU's user's on the host, whoever made them.
	uid, _ := a.Libvirt.SharedDirOwner()
	if out := sharedRun(t, cl, kit.NS, "a2", "su admin -c 'echo by-admin >/shared/mine' && ls -ln /shared/mine"); out.ExitCode != 0 || !strings.Contains(out.Stdout, " 1000 ") {
		t.Fatalf("admin's file in the guest: %+v", out)
	}
	for _, f := range []string{"hello", "mine"} {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(sharedDir, f), &st); err != nil || int(st.Uid) != uid {
			t.Fatalf("%s on the host belongs to uid %d (%v), want QEMU's %d", f, st.Uid, err, uid)
		}
	}
	for _, link := range []string{"etc-link", "up"} {
		st, err := os.Lstat(filepath.Join(sharedDir, link))
		if err != nil || st.Mode()&os.ModeSymlink != 0 || !st.Mode().IsRegular() {
			t.Fatalf("the guest's symlink %s on the host: %v %v, want a regular file", link, st.Mode(), err)
		}
	}

	// Another namespace, on the machine's other peer: its own folder.
	const nsB = "shared-b"
	if _, err := cl.CreateNamespace(kit.Ctx(t), nsB); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SetNodeNamespace(kit.Ctx(t), kit.NS, b.Name, nsB); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.SetSharedStorage(kit.Ctx(t), nsB, 1<<30); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(image)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	_, err = cl.UploadImage(kit.Ctx(t), nsB, "mini-linux", f, st.Size())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	deploy(nsB, "b1", b)
	if out := sharedRun(t, cl, nsB, "b1", "ls -A /shared"); strings.Contains(out.Stdout, "hello") {
		t.Fatalf("namespace %s sees namespace %s's files: %+v", nsB, kit.NS, out)
	}

	// The bound: 1 GiB per node.
	out = sharedRun(t, cl, kit.NS, "a1", "dd if=/dev/zero of=/shared/fill bs=1M count=1100 2>&1; echo exit=$?; rm -f /shared/fill")
	t.Logf("a1 past the bound: %q", out.Stdout)
	if !strings.Contains(out.Stdout, "No space left on device") || strings.Contains(out.Stdout, "exit=0") {
		t.Fatalf("writing 1100 MiB into a 1 GiB folder: %+v", out)
	}

	// The folder outlives its VMs; a clear waits for them.
	for _, vm := range []string{"a1", "a2"} {
		if err := cl.DeleteVM(kit.Ctx(t), kit.NS, vm); err != nil {
			t.Fatal(err)
		}
	}
	deploy(kit.NS, "a3", a)
	if out := sharedRun(t, cl, kit.NS, "a3", "cat /shared/hello"); strings.TrimSpace(out.Stdout) != "from-a1" {
		t.Fatalf("after its VMs were deleted, the folder holds %+v", out)
	}
	c.WaitFor("the node's usage report", time.Minute, func() error {
		n := kit.NodeByName(t, cl, a.Name)
		for _, u := range n.SharedStorage.Usage {
			if u.Namespace == kit.NS && u.UsedBytes > 0 {
				return nil
			}
		}
		return fmt.Errorf("node %s reports %+v", a.Name, n.SharedStorage)
	})
	if _, err := cl.ClearSharedStorage(kit.Ctx(t), kit.NS, a.Name); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("a clear while a3 uses the folder: %v, want 409", err)
	}
	if err := cl.DeleteVM(kit.Ctx(t), kit.NS, "a3"); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the clear once a3 is gone", 2*time.Minute, func() error {
		_, err := c.Client(b).ClearSharedStorage(kit.Ctx(t), kit.NS, a.Name) // through the other peer
		return err
	})
	if _, err := os.Stat(filepath.Join(sharedDir, "hello")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a cleared folder still holds hello: %v", err)
	}
	if err := cl.DisableSharedStorage(kit.Ctx(t), kit.NS); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the folder gone from the host", time.Minute, func() error {
		if _, err := os.Stat(sharedDir); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
}
