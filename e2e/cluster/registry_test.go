package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// An image pushed through a peer that does not hold it is carried out by a
// peer that does, with the namespace's sealed credential; the registry holds
// the disk byte for byte; a second push sends nothing; wrong credentials
// fail the job with the registry's reason; the password is nowhere in the
// data dirs.
func TestPushImage_registry(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	holder, other := c.Members[0], c.Members[1]
	data := make([]byte, 6<<20)
	_, _ = rand.Read(data[:2<<20])
	disk := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(disk, data, 0o600); err != nil {
		t.Fatal(err)
	}
	img := kit.Upload(t, c.Client(holder), "disk", disk)
	admin := c.Client(other)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := admin.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: "wrong", AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/team/disk:v1"
	job, err := admin.PushImage(ctx, kit.NS, "disk", ref)
	if err != nil {
		t.Fatal(err)
	}
	if j := kit.WaitJob(t, c, admin, job.JobName); j.State != api.JobFailed || !strings.Contains(j.Message, "401") || j.Node != holder.Name {
		t.Fatalf("push with a wrong password: %+v", j)
	}
	if _, err := admin.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	creds, err := admin.ListRegistryCredentials(ctx, kit.NS)
	if err != nil || len(creds) != 1 || creds[0].Username != reg.Username {
		t.Fatalf("credentials %+v %v", creds, err)
	}
	job, err = admin.PushImage(ctx, kit.NS, "disk", ref)
	if err != nil {
		t.Fatal(err)
	}
	j := kit.WaitJob(t, c, admin, job.JobName)
	if j.State != api.JobSucceeded || j.BytesDone != int64(len(data)) || j.CompletionTime == nil {
		t.Fatalf("push: %+v", j)
	}
	r, _ := ocidisk.ParseReference(ref, true, false)
	res, err := ocidisk.Resolve(ctx, r, ocidisk.Registry{Username: reg.Username, Password: reg.Password, Insecure: true})
	if err != nil || res.Config.Digest != img.Digest || res.Config.VirtualSize != int64(len(data)) {
		t.Fatalf("the registry has %+v (%v), want the digest %s", res.Config, err, img.Digest)
	}
	before := reg.Received()
	job, _ = admin.PushImage(ctx, kit.NS, "disk", reg.Host+"/team/disk:v2")
	if j := kit.WaitJob(t, c, admin, job.JobName); j.State != api.JobSucceeded || !strings.Contains(j.Message, "0 sent") {
		t.Fatalf("second push: %+v", j)
	}
	if sent := reg.Received() - before; sent > 256<<10 {
		t.Fatalf("the second push sent %d bytes", sent)
	}
	jobs, _ := admin.ListJobs(ctx, kit.NS)
	if len(jobs) != 3 { // the wrong password, the push, the second push
		t.Fatalf("jobs %+v", jobs)
	}
	for _, m := range c.Members {
		filepath.WalkDir(m.DataDir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(reg.Password)) {
				t.Errorf("%s holds the registry password in plain text", p)
			}
			return nil
		})
	}
	for _, bad := range []string{"no-registry", reg.Host + "/UPPER/x:y", ""} {
		if _, err := admin.PushImage(ctx, kit.NS, "disk", bad); api.CodeOf(err) != 400 {
			t.Errorf("push to %q: %v", bad, err)
		}
	}
	if _, err := admin.PushImage(ctx, kit.NS, "nope", ref); api.CodeOf(err) != 404 {
		t.Errorf("push of an unknown image: %v", err)
	}
	// The test cluster reaches nothing off loopback: such a push is refused
	// before a job is made.
	if _, err := admin.PushImage(ctx, kit.NS, "disk", "registry.example:5000/a/b:c"); api.CodeOf(err) != http.StatusForbidden || !strings.Contains(err.Error(), "may not reach") {
		t.Fatalf("push off loopback: %v", err)
	}
	if err := admin.DeleteRegistryCredential(ctx, kit.NS, reg.Host); err != nil {
		t.Fatal(err)
	}
}

// TestDeploy_malformed_registry_images_are_the_callers: a deploy from a
// registry image that is not one svc runs (a Tart image of another guest
// OS or arch, its VM config not JSON) is a 400 that says why, not a 503
// that asks the caller to try again.
func TestDeploy_malformed_registry_images_are_the_callers(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 1, testcluster.Options{})
	admin := c.Client(c.WaitLeader())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	good := registrytest.TartConfig{Version: 1, OS: "linux", Arch: "amd64", CPUCount: 1, MemorySize: 1 << 30, MACAddress: "7e:5f:00:00:00:02"}
	for _, tc := range []struct {
		name, want string
		cfg        func(c registrytest.TartConfig) registrytest.TartConfig
	}{
		{"another guest OS", "guest OS", func(c registrytest.TartConfig) registrytest.TartConfig { c.OS = "windows"; return c }},
		{"another arch", "arch", func(c registrytest.TartConfig) registrytest.TartConfig { c.Arch = "sparc"; return c }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := reg.Host + "/bad/" + strings.ToLower(strings.ReplaceAll(tc.name, " ", "-")) + ":v1"
			r, err := name.ParseReference(ref, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			registrytest.PushTart(t, r, registrytest.TartImage{Config: tc.cfg(good), Disk: make([]byte, 1<<20), NVRAM: []byte("nvram"), LayerSize: 1 << 20},
				remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password}), remote.WithTransport(reg.Transport()))
			_, err = admin.DeployVM(ctx, kit.NS, api.DeployRequest{Image: ref, Name: "bad"})
			if api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("deploy: %v", err)
			}
		})
	}
}

// TestDeploy_an_image_its_registry_refuses: a deploy whose disk the
// registry refuses to give (its manifest is there, one of its layers is
// not: the registry answers 404 BLOB_UNKNOWN). Before, that was the
// server's 500 ("vm failed to start on node: pull ..."); it is the
// registry's refusal of what the caller named: 400, in the registry's own
// words, and the VM is not left behind.
func TestDeploy_an_image_its_registry_refuses(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 1, testcluster.Options{Prefix: "regrefuse"})
	admin := c.Client(c.WaitLeader())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := admin.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	disk := make([]byte, 2<<20)
	for i := range disk {
		disk[i] = byte(i * 7)
	}
	// An image the registry has whole deploys.
	whole := reg.Host + "/team/whole:v1"
	kit.PushDisk(t, reg, whole, disk)
	if vm, err := admin.DeployVM(ctx, kit.NS, api.DeployRequest{Image: whole, Name: "whole", CPU: kit.Intp(1)}); err != nil || vm.Status != api.StatusRunning {
		t.Fatalf("a deploy of an image the registry has whole: %+v %v", vm, err)
	}
	disk[0]++ // other content, which no image of the namespace has
	ref := reg.Host + "/team/gone:v1"
	pushed := kit.PushDisk(t, reg, ref, disk)
	// The registry loses a layer (deleted through its own API).
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, "https://"+reg.Host+"/v2/team/gone/blobs/"+pushed.Chunks[0].Layer.Digest.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(reg.Username, reg.Password)
	resp, err := (&http.Client{Transport: reg.Transport()}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete the layer: %d", resp.StatusCode)
	}
	_, err = admin.DeployVM(ctx, kit.NS, api.DeployRequest{Image: ref, Name: "refused", CPU: kit.Intp(1)})
	if api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "the registry answered 404") {
		t.Fatalf("a deploy of an image whose layer the registry refuses: %v, want 400 in the registry's words", err)
	}
	t.Logf("refused: %v", err)
	if vms, err := admin.ListVMs(ctx, kit.NS); err != nil || slices.ContainsFunc(vms, func(v api.VM) bool { return v.Name == "refused" }) {
		t.Fatalf("left behind: %+v %v", vms, err)
	}
}
