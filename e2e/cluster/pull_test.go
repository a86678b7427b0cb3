package cluster

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

func hasBlob(m *testcluster.Member, digest string) bool {
	_, err := os.Stat(filepath.Join(m.DataDir, "images", "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
	return err == nil
}

// A deploy from a registry reference pulls on the VM's host and records the
// image (sourceType registry, source pinned to the manifest); a second
// deploy on another peer takes the disk from the first peer, not the
// registry; a moved tag pulls only the chunks that changed; the registry's
// refusals are clear Statuses that leave no image and no VM.
func TestDeploy_fromReference(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	disk := make([]byte, 8<<20)
	_, _ = rand.Read(disk[:4<<20])
	ref := reg.Host + "/team/tiny:v1"
	pushed := kit.PushDisk(t, reg, ref, disk)

	for _, e := range []struct {
		name, image string
		code        int
		want        string
	}{
		{"untrusted certificate without allowInsecure", ref, 400, "certificate"},
		{"no tag", reg.Host + "/team/tiny", 400, "tag"},
	} {
		_, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Image: e.image})
		if api.CodeOf(err) != e.code || !strings.Contains(err.Error(), e.want) {
			t.Errorf("%s: %v, want %d %q", e.name, err, e.code, e.want)
		}
	}
	if _, err := cl.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: "wrong", AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Image: ref}); api.CodeOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "refused") {
		t.Errorf("wrong password: %v", err)
	}
	if _, err := cl.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Image: reg.Host + "/team/tiny:nope"}); api.CodeOf(err) != http.StatusNotFound {
		t.Errorf("unknown tag: %v", err)
	}

	sent := reg.Sent()
	vm, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "from-reg", Image: ref, Node: c.Members[1].Name})
	if err != nil {
		t.Fatal(err)
	}
	img, err := cl.GetImage(ctx, kit.NS, "tiny-v1")
	if err != nil {
		all, _ := cl.ListImages(ctx, kit.NS)
		t.Fatalf("%v; images %+v; vm %+v", err, all, vm)
	}
	if err != nil || img.SourceType != "registry" || img.Source != ref+"@"+pushed.ManifestDigest || img.Digest != pushed.Config.Digest ||
		img.Description != "pushed by the test" || vm.Image != "tiny-v1" {
		t.Fatalf("image %+v (%v), vm %+v", img, err, vm)
	}
	if !hasBlob(c.Members[1], img.Digest) {
		t.Fatal("the VM's host holds no blob")
	}
	if got := reg.Sent() - sent; got < 4<<20/2 {
		t.Fatalf("the registry sent %d bytes for a disk of 4 MiB of random data", got)
	}

	sent = reg.Sent()
	if _, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "from-peer", Image: ref, Node: c.Members[2].Name}); err != nil {
		t.Fatal(err)
	}
	if got := reg.Sent() - sent; got > 256<<10 || !hasBlob(c.Members[2], img.Digest) {
		t.Fatalf("the second deploy took %d bytes from the registry (blob there: %v)", got, hasBlob(c.Members[2], img.Digest))
	}

	// The tag moves to a disk with one changed chunk: the host pulls one.
	_, _ = rand.Read(disk[:1<<20])
	moved := kit.PushDisk(t, reg, ref, disk)
	if err := cl.DeleteVM(ctx, kit.NS, "from-reg"); err != nil {
		t.Fatal(err)
	}
	sent = reg.Sent()
	if _, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "moved", Image: ref, Node: c.Members[1].Name}); err != nil {
		t.Fatal(err)
	}
	if img, err := cl.GetImage(ctx, kit.NS, "tiny-v1"); err != nil || img.Digest != moved.Config.Digest || !strings.HasSuffix(img.Source, moved.ManifestDigest) {
		t.Fatalf("after the tag moved: %+v %v", img, err)
	}
	if got := reg.Sent() - sent; got > 1<<20+256<<10 || got < 1<<20/2 {
		t.Fatalf("pulling a disk with one changed 1 MiB chunk took %d bytes from the registry", got)
	}

	reg.Stop()
	if _, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "reg-down", Image: reg.Host + "/team/tiny:v2"}); api.CodeOf(err) != http.StatusServiceUnavailable {
		t.Errorf("registry down: %v", err)
	}
	imgs, _ := cl.ListImages(ctx, kit.NS)
	vms, _ := cl.ListVMs(ctx, kit.NS)
	for _, i := range imgs {
		if strings.HasPrefix(i.Name, "tiny-") && i.Name != "tiny-v1" {
			t.Errorf("a refused deploy left image %+v", i)
		}
	}
	if len(vms) != 2 {
		t.Errorf("VMs %+v, want from-peer and moved", vms)
	}
}
