package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/disktest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// waitImage waits up to timeout until the image is in state and returns it.
func waitImage(t *testing.T, c *testcluster.Cluster, cl *api.Client, name, state string, timeout time.Duration) api.Image {
	t.Helper()
	var img api.Image
	c.WaitFor("image "+name+" "+state, timeout, func() error {
		var err error
		img, err = cl.GetImage(kit.Ctx(t), kit.NS, name)
		if err != nil {
			return err
		}
		if img.State != state {
			return fmt.Errorf("image %s is %s (%s)", name, img.State, img.ErrorMessage)
		}
		return nil
	})
	return img
}

// Commit moves the image's name to the VM's disk and restarts the VM on it;
// another VM on the old content keeps it; a VM config deploys the committed
// content. Save makes a new image the VM then runs on.
func TestImageOp_commit_and_save(t *testing.T) {
	c := testcluster.New(t, 2, testcluster.Options{})
	leader := c.WaitLeader()
	host := c.Followers()[0]
	cl := c.Client(leader)
	orig := kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, api.VMConfig{Name: "cfg", Image: "tiny", CPU: 1, Memory: 0.25}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"worker", "bystander"} {
		if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: name, Node: host.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.25)}); err != nil {
			t.Fatal(err)
		}
	}
	desc := "after the first commit"
	st, err := cl.CommitVM(kit.Ctx(t), kit.NS, "worker", api.CommitRequest{Description: &desc})
	if err != nil || st.StatusURL != "/api/v1/namespaces/svc-default/images/tiny" {
		t.Fatalf("commit: %+v %v", st, err)
	}
	committed := waitImage(t, c, cl, "tiny", api.ImageReady, 30*time.Second)
	if committed.Digest == orig.Digest || committed.Description != desc {
		t.Fatalf("committed image %+v (was %s)", committed, orig.Digest)
	}
	if !host.Peer.Images().Has(committed.Digest) {
		t.Fatal("the host does not hold the committed content")
	}
	kit.WaitRunning(t, c, cl, "worker", 30*time.Second)
	domain := hypervisor.DomainName(host.Name, kit.NS, "worker")
	c.WaitFor("the worker's domain on the new content", 10*time.Second, func() error {
		if spec, _ := host.Fake.Spec(domain); spec.BaseImage != host.Peer.Images().Path(committed.Digest) {
			return fmt.Errorf("base %s", spec.BaseImage)
		}
		return nil
	})
	if spec, _ := host.Fake.Spec(hypervisor.DomainName(host.Name, kit.NS, "bystander")); spec.BaseImage != host.Peer.Images().Path(orig.Digest) {
		t.Fatalf("the bystander moved to %s", spec.BaseImage)
	}
	fromCfg, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{VMConfig: "cfg", Name: "from-config"})
	if err != nil {
		t.Fatal(err)
	}
	if vm, ok := leader.Peer.FSM().VM(kit.NS, fromCfg.Name); !ok || vm.ImageDigest != committed.Digest {
		t.Fatalf("a config deploy after the commit runs %s", vm.ImageDigest)
	}

	// Save: a new image, named by the caller; the VM runs on it.
	st, err = cl.SaveVM(kit.Ctx(t), kit.NS, "worker", api.SaveRequest{ImageName: "tiny-saved"})
	if err != nil || !strings.HasSuffix(st.StatusURL, "/images/tiny-saved") {
		t.Fatalf("save: %+v %v", st, err)
	}
	saved := waitImage(t, c, cl, "tiny-saved", api.ImageReady, 30*time.Second)
	if saved.SourceType != "vm" || saved.Source != "worker" || saved.Digest == committed.Digest {
		t.Fatalf("saved %+v", saved)
	}
	if vm := kit.WaitRunning(t, c, cl, "worker", 30*time.Second); vm.Image != "tiny-saved" {
		t.Fatalf("the saved VM runs on %s", vm.Image)
	}
	if _, err := cl.SaveVM(kit.Ctx(t), kit.NS, "worker", api.SaveRequest{ImageName: "tiny-saved"}); api.CodeOf(err) != 409 {
		t.Fatalf("a save over a taken name: %v", err)
	}
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny-saved", Name: "from-saved", CPU: kit.Intp(1), Memory: kit.Floatp(0.25)}); err != nil {
		t.Fatalf("deploy from the saved image: %v", err)
	}
}

// A host that crashes in the middle of a commit leaves the image with its
// old content, Updating; back, it carries the commit out: the image is Ready
// with new content, whole, and the VM runs again.
func TestImageOp_host_crash_during_commit(t *testing.T) {
	c := testcluster.New(t, 3, testcluster.Options{})
	leader := c.WaitLeader()
	host := c.Followers()[0]
	cl := c.Client(leader)
	orig := kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "w", Node: host.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.25)}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	host.Fake.HoldExports(release)
	if _, err := cl.CommitVM(kit.Ctx(t), kit.NS, "w", api.CommitRequest{}); err != nil {
		t.Fatal(err)
	}
	c.WaitFor("the export to start", 20*time.Second, func() error {
		if host.Fake.Exports() == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	c.Crash(host)
	if img, _ := cl.GetImage(kit.Ctx(t), kit.NS, "tiny"); img.State != api.ImageUpdating || img.Digest != orig.Digest {
		t.Fatalf("with the host down the image is %+v", img)
	}
	close(release)
	c.Restart(host)
	img := waitImage(t, c, cl, "tiny", api.ImageReady, 30*time.Second)
	if img.Digest == orig.Digest {
		t.Fatal("the commit was not carried out")
	}
	// Whole: the content on the host hashes to its digest, and no staging
	// file of the interrupted attempt is left.
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
	kit.WaitRunning(t, c, cl, "w", 30*time.Second)
}

// While a save (or commit) is under way, every lifecycle action on its VM
// is refused at once with a 409 that names the operation, and the VM runs
// again when it is done.
func TestImageOp_actions_refused_while_one_runs(t *testing.T) {
	c := testcluster.New(t, 1, testcluster.Options{})
	c.WaitLeader()
	host := c.Members[0]
	cl := c.Client(host)
	kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "busy", CPU: kit.Intp(1), Memory: kit.Floatp(0.25)}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	host.Fake.HoldExports(release)
	if _, err := cl.SaveVM(kit.Ctx(t), kit.NS, "busy", api.SaveRequest{ImageName: "busy-saved"}); err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"stop", "suspend", "revert", "start", "resume"} {
		start := time.Now()
		_, err := cl.ExecVM(kit.Ctx(t), kit.NS, "busy", action)
		if api.CodeOf(err) != http.StatusConflict || !strings.Contains(err.Error(), `save into image "busy-saved"`) || time.Since(start) > 10*time.Second {
			t.Fatalf("%s during a save: %v after %s", action, err, time.Since(start))
		}
	}
	close(release)
	waitImage(t, c, cl, "busy-saved", api.ImageReady, 30*time.Second)
	kit.WaitRunning(t, c, cl, "busy", 30*time.Second)
	if _, err := cl.ExecVM(kit.Ctx(t), kit.NS, "busy", "stop"); err != nil {
		t.Fatalf("stop after the save: %v", err)
	}
}

// A disk the hypervisor writes for a save is checked like any disk that
// enters the cluster: one that names a backing file is refused on each
// attempt, the save fails naming the check, nothing is left staged, and the
// VM runs again on its old image.
func TestImageOp_written_disk_refused(t *testing.T) {
	disktest.RequireQemuImg(t)
	c := testcluster.New(t, 1, testcluster.Options{})
	m := c.WaitLeader()
	cl := c.Client(m)
	orig := kit.Upload(t, cl, "tiny", kit.TinyImage(t))
	if _, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "tiny", Name: "w", CPU: kit.Intp(1), Memory: kit.Floatp(0.25)}); err != nil {
		t.Fatal(err)
	}
	kit.WaitRunning(t, c, cl, "w", 30*time.Second)
	m.Fake.ExportAs(disktest.WithBacking(t, filepath.Join(t.TempDir(), "never-opened"), "raw"))
	if _, err := cl.SaveVM(kit.Ctx(t), kit.NS, "w", api.SaveRequest{ImageName: "w-saved"}); err != nil {
		t.Fatal(err)
	}
	img := waitImage(t, c, cl, "w-saved", api.ImageFailed, 60*time.Second)
	if !strings.Contains(img.ErrorMessage, "the written disk") || !strings.Contains(img.ErrorMessage, "backing") {
		t.Fatalf("the failed save says %q", img.ErrorMessage)
	}
	if n := m.Fake.Exports(); n != 3 {
		t.Fatalf("%d exports, want one per attempt (3)", n)
	}
	if tmp, _ := os.ReadDir(filepath.Join(m.DataDir, "images", "tmp")); len(tmp) != 0 {
		t.Fatalf("staging files left: %v", tmp)
	}
	if vm := kit.WaitRunning(t, c, cl, "w", 30*time.Second); vm.Image != "tiny" {
		t.Fatalf("the VM runs on %s after the failed save", vm.Image)
	}
	if now, err := cl.GetImage(kit.Ctx(t), kit.NS, "tiny"); err != nil || now.Digest != orig.Digest || now.State != api.ImageReady {
		t.Fatalf("the VM's image after the failed save: %+v %v", now, err)
	}
}
