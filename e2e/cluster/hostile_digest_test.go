package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
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

// A digest names bytes, never a right to them. A plain user of svc-default
// runs a registry whose disk config claims the digest and size of a
// private image of team-a (digests are printed by upload, get and push)
// and serves garbage for it. Before, the node that held team-a's blob (or
// fetched it from a peer that did) took the claim for the bytes: the
// deploy ran, an image of svc-default pointed at team-a's blob, and its
// download returned team-a's bytes. Now the bytes must come from the
// registry (or from what svc-default may read), so every way the claim
// can come in (a deploy from the reference on any node, a pull of a
// catalog entry, a Tart image whose layer claims the digest, a
// containerDisk) records nothing of team-a's: no image of that digest in
// svc-default, no download of team-a's bytes.
func TestHostileDigest_claims_of_another_namespaces_content(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	admin := c.Client(c.Members[0])
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// team-a's private image, held by the first peer only
	if _, err := admin.CreateNamespace(ctx, "team-a"); err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 2<<20)
	_, _ = rand.Read(secret)
	copy(secret, "TEAM-A PRIVATE KEY MATERIAL")
	victim, err := admin.UploadImage(ctx, "team-a", "secret", bytes.NewReader(secret), int64(len(secret)))
	if err != nil {
		t.Fatal(err)
	}
	// the registry the default namespace may pull from (its credential set
	// by an admin, as for any registry a team uses)
	if _, err := admin.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	mallory := api.NewClient("http://"+c.Members[1].Peer.APIAddr(), c.Token("mallory", false))

	// the claim: garbage of the victim's size, its config naming the
	// victim's digest
	garbage := make([]byte, len(secret))
	_, _ = rand.Read(garbage)
	claim := func(ref string) {
		t.Helper()
		res := kit.PushConfig(t, reg, ref, garbage, ocidisk.Config{Kind: ocidisk.KindImage, Arch: "amd64", Digest: victim.Digest})
		if res.Config.Digest != victim.Digest {
			t.Fatalf("the claim was pushed as %s", res.Config.Digest)
		}
	}
	// nothing of team-a's in the default namespace (its VMs go after)
	noTheft := func(t *testing.T, how string) {
		t.Helper()
		imgs, err := mallory.ListImages(ctx, kit.NS)
		if err != nil {
			t.Fatal(err)
		}
		for _, img := range imgs {
			if img.Digest == victim.Digest {
				t.Fatalf("%s: image %q of svc-default points at team-a's content", how, img.Name)
			}
			body, _, _, err := mallory.DownloadImage(ctx, kit.NS, img.Name, 0)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(io.LimitReader(body, 64))
			body.Close()
			if bytes.Contains(b, []byte("TEAM-A")) {
				t.Fatalf("%s: image %q downloads team-a's bytes", how, img.Name)
			}
		}
		vms, _ := mallory.ListVMs(ctx, kit.NS)
		for _, vm := range vms {
			_ = mallory.DeleteVM(ctx, kit.NS, vm.Name)
		}
	}

	claim(reg.Host + "/mallory/steal:x")
	for i, node := range []string{c.Members[0].Name, c.Members[2].Name, ""} { // holds it, fetches it from a peer, placed freely
		how := fmt.Sprintf("deploy on %q", node)
		_, err := mallory.DeployVM(ctx, kit.NS, api.DeployRequest{Name: fmt.Sprintf("steal-%d", i), Image: reg.Host + "/mallory/steal:x", Node: node})
		if code := api.CodeOf(err); code < 400 || code >= 500 || !strings.Contains(err.Error(), "sha256") {
			t.Errorf("%s: %v, want a 4xx that says the digest does not match", how, err)
		}
		noTheft(t, how)
	}

	// a catalog entry (the catalog an admin set, its registry lying)
	claim(reg.Host + "/mallory/catalog:steal-1")
	if _, err := admin.SetRemoteCatalogs(ctx, []string{reg.Host + "/mallory/catalog"}); err != nil {
		t.Fatal(err)
	}
	acc, err := mallory.PullRemoteImage(ctx, kit.NS, "catalog-steal-1", "stolen")
	if err != nil {
		t.Fatal(err)
	}
	if j := kit.WaitJob(t, c, mallory, acc.JobName); j.State != "Failed" || !strings.Contains(j.Message, "sha256") {
		t.Errorf("pull of the claim: %+v", j)
	}
	noTheft(t, "catalog pull")

	// a Tart image whose disk layer claims the victim's digest
	tartRef := reg.Host + "/mallory/tart:x"
	r, err := name.ParseReference(tartRef, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	registrytest.PushTart(t, r, registrytest.TartImage{
		Config: registrytest.TartConfig{Version: 1, OS: "linux", Arch: "amd64", CPUCount: 1, MemorySize: 1 << 30, MACAddress: "7e:5f:00:00:00:03"},
		Disk:   garbage, NVRAM: []byte("nvram"), LayerSize: len(garbage), ClaimDigest: victim.Digest,
	}, remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password}), remote.WithTransport(reg.Transport()))
	if _, err := mallory.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "steal-tart", Image: tartRef}); api.CodeOf(err) != 400 {
		t.Errorf("deploy of the Tart claim: %v, want 400", err)
	}
	noTheft(t, "tart")

	// a containerDisk: pulled whole, it is what its registry sent
	cd := filepath.Join(t.TempDir(), "cd.raw")
	if err := os.WriteFile(cd, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	kit.PushContainerDisk(t, reg, reg.Host+"/mallory/cd:x", cd)
	if _, err := mallory.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "steal-cd", Image: reg.Host + "/mallory/cd:x"}); err != nil {
		t.Logf("containerDisk deploy: %v", err)
	}
	noTheft(t, "containerDisk")

	// team-a's own image is as it was
	body, _, _, err := admin.DownloadImage(ctx, "team-a", "secret", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	if b, _ := io.ReadAll(body); !bytes.Equal(b, secret) {
		t.Fatal("team-a's image changed")
	}
}
