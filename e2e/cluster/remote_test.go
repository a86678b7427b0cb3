package cluster

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// The remote catalogs list each tag as a remote image or ISO; a pull is a
// 202 job that copies one into the namespace (sourceType remote); a pull
// whose peer is killed midway leaves no record and no blob, and a retry
// completes; bad input is 4xx.
func TestRemote_catalog_pull(t *testing.T) {
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	disk := make([]byte, 8<<20)
	_, _ = rand.Read(disk)
	repo := reg.Host + "/os/catalog"
	img := kit.PushDisk(t, reg, repo+":tiny-1", disk)
	iso := make([]byte, 1<<20)
	copy(iso[16*2048+1:], "CD001")
	isoPushed := kit.PushKind(t, reg, repo+":boot-1", iso, ocidisk.KindISO)

	admin := c.Client(c.Followers()[0])
	if _, err := admin.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SetRemoteCatalogs(ctx, []string{"no-host", "x"}); api.CodeOf(err) != http.StatusBadRequest {
		t.Fatalf("bad catalogs: %v", err)
	}
	if got, err := admin.SetRemoteCatalogs(ctx, []string{repo}); err != nil || len(got.Repositories) != 1 {
		t.Fatalf("catalogs %+v %v", got, err)
	}
	items, err := admin.ListRemoteImages(ctx, kit.NS)
	if err != nil || len(items) != 2 {
		t.Fatalf("remote images %+v %v", items, err)
	}
	byName := map[string]api.RemoteImage{}
	for _, it := range items {
		byName[it.Name] = it
	}
	if it := byName["catalog-tiny-1"]; it.Type != "image" || it.Size != api.FormatSize(8<<20) || it.Source != repo+":tiny-1" || it.Digest != img.Config.Digest {
		t.Fatalf("remote image %+v", it)
	}
	if it := byName["catalog-boot-1"]; it.Type != "iso" {
		t.Fatalf("remote iso %+v", it)
	}

	for _, bad := range []struct {
		name     string
		pull     func() error
		wantCode int
	}{
		{"unknown", func() error { _, err := admin.PullRemoteImage(ctx, kit.NS, "nope", ""); return err }, 404},
		{"an ISO as an image", func() error { _, err := admin.PullRemoteImage(ctx, kit.NS, "catalog-boot-1", ""); return err }, 404},
		{"bad new name", func() error { _, err := admin.PullRemoteImage(ctx, kit.NS, "catalog-tiny-1", "Bad/Name"); return err }, 400},
	} {
		if err := bad.pull(); api.CodeOf(err) != bad.wantCode {
			t.Errorf("%s: %v, want %d", bad.name, err, bad.wantCode)
		}
	}

	// The pull runs on the leader (of the time), slowed so that it can be killed midway.
	reg.SetRate(1 << 20)
	acc, err := admin.PullRemoteImage(ctx, kit.NS, "catalog-tiny-1", "tiny")
	if err != nil || !strings.HasSuffix(acc.StatusURL, "/jobs/"+acc.JobName) {
		t.Fatalf("pull: %+v %v", acc, err)
	}
	var puller *testcluster.Member
	c.WaitFor("the pull is under way", time.Minute, func() error {
		j, err := admin.GetJob(ctx, kit.NS, acc.JobName)
		if err != nil || j.BytesDone == 0 {
			return errors.New("not yet")
		}
		for _, m := range c.Members {
			if m.Name == j.Node {
				puller = m
			}
		}
		return nil
	})
	c.Crash(puller)
	var survivor *api.Client
	for _, m := range c.Members {
		if m != puller {
			survivor = c.Client(m)
		}
	}
	c.WaitFor("the job of the dead peer fails", time.Minute, func() error {
		j, err := survivor.GetJob(ctx, kit.NS, acc.JobName)
		if err != nil || j.State != api.JobFailed {
			return fmt.Errorf("job %+v, %v", j, err)
		}
		return nil
	})
	if _, err := survivor.GetImage(ctx, kit.NS, "tiny"); api.CodeOf(err) != http.StatusNotFound {
		t.Fatalf("a killed pull left a record: %v", err)
	}
	c.Restart(puller)
	c.WaitCaughtUp(puller)
	if hasBlob(puller, img.Config.Digest) {
		t.Fatal("a killed pull left a blob")
	}
	if tmp, _ := os.ReadDir(filepath.Join(puller.DataDir, "images", "tmp")); len(tmp) != 0 {
		t.Fatalf("a killed pull left %d staging files", len(tmp))
	}
	reg.SetRate(0)
	acc, err = survivor.PullRemoteImage(ctx, kit.NS, "catalog-tiny-1", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if j := kit.WaitJob(t, c, survivor, acc.JobName); j.State != api.JobSucceeded || j.BytesDone != int64(len(disk)) {
		t.Fatalf("retried pull %+v", j)
	}
	got, err := survivor.GetImage(ctx, kit.NS, "tiny")
	if err != nil || got.SourceType != "remote" || got.Digest != img.Config.Digest || !strings.HasPrefix(got.Source, repo+":tiny-1@sha256:") {
		t.Fatalf("pulled image %+v %v", got, err)
	}
	if _, err := survivor.PullRemoteImage(ctx, kit.NS, "catalog-tiny-1", "tiny"); err != nil {
		t.Fatalf("pulling the same remote image again: %v", err)
	}
	acc, err = survivor.PullRemoteISO(ctx, kit.NS, "catalog-boot-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if j := kit.WaitJob(t, c, survivor, acc.JobName); j.State != api.JobSucceeded {
		t.Fatalf("iso pull %+v", j)
	}
	if i, err := survivor.GetISO(ctx, kit.NS, "catalog-boot-1"); err != nil || i.Digest != isoPushed.Config.Digest || i.SourceType != "remote" {
		t.Fatalf("pulled iso %+v %v", i, err)
	}
	if _, err := survivor.PullRemoteImage(ctx, kit.NS, "catalog-tiny-1", "catalog-boot-1x"); err != nil {
		t.Fatal(err)
	}
	if _, err := survivor.GenerateImage(ctx, kit.NS, api.GenerateImageRequest{Name: "blank", Size: "1G"}); err != nil {
		t.Fatal(err)
	}
	if _, err := survivor.PullRemoteImage(ctx, kit.NS, "catalog-tiny-1", "blank"); api.CodeOf(err) != http.StatusConflict {
		t.Fatalf("pull over a generated image: %v", err)
	}
}
