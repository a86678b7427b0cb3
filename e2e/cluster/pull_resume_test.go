package cluster

import (
	"context"
	"crypto/rand"
	"fmt"
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

// partialDir is where a member keeps the partial disks of its pulls.
func partialDir(m *testcluster.Member) string { return filepath.Join(m.DataDir, "images", "partial") }

// crashScene is a registry and a 3-peer cluster with a follower to host a
// VM and be killed, and another peer to survive it.
func crashScene(t *testing.T) (*registrytest.Server, *testcluster.Cluster, *testcluster.Member, *testcluster.Member) {
	t.Helper()
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 3, testcluster.Options{})
	c.WaitLeader()
	host := c.Followers()[0]
	for _, m := range c.Members {
		if m != host {
			return reg, c, host, m
		}
	}
	t.Fatal("no peer besides the host")
	return nil, nil, nil, nil
}

// A VM's host is killed while it pulls the VM's disk from a registry: back,
// it resumes the pull (the chunks it had written are not fetched again),
// the VM runs on the whole disk, and the partial disk is gone.
func TestDeploy_fromReference_pull_resumes_after_a_host_crash(t *testing.T) {
	reg, c, host, survivor := crashScene(t)
	cl := c.Client(survivor)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const chunks = 8
	disk := make([]byte, chunks<<20)
	_, _ = rand.Read(disk)
	ref := reg.Host + "/team/resume:v1"
	pushed := kit.PushDisk(t, reg, ref, disk)
	journal := filepath.Join(partialDir(host), strings.TrimPrefix(pushed.Config.Digest, "sha256:")+"@"+kit.NS+".journal") // the namespace's own
	if _, err := cl.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}

	reg.SetRate(1 << 20)
	deployed := make(chan error, 1)
	go func() {
		_, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Name: "resumed", Image: ref, Node: host.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.5)})
		deployed <- err
	}()
	c.WaitFor("the host has written a chunk", time.Minute, func() error {
		if fi, err := os.Stat(journal); err != nil || fi.Size() < 16 {
			return fmt.Errorf("journal: %v", err)
		}
		return nil
	})
	c.Crash(host)
	reg.SetRate(0)
	sent := reg.Sent()
	c.Restart(host)
	c.WaitCaughtUp(host)
	c.WaitFor("the VM runs on its host", 2*time.Minute, func() error {
		vm, err := cl.GetVM(ctx, kit.NS, "resumed")
		if err != nil || vm.Status != api.StatusRunning || vm.Node != host.Name {
			return fmt.Errorf("vm %+v %v", vm, err)
		}
		return nil
	})
	resumed, fetched := kit.Metric(t, host, `svc_pull_chunks_total{from="resumed"}`), kit.Metric(t, host, `svc_pull_chunks_total{from="registry"}`)
	if resumed < 1 || resumed+fetched != chunks {
		t.Fatalf("the restarted host took %v chunks from its partial disk and %v from the registry, for a disk of %d", resumed, fetched, chunks)
	}
	t.Logf("after the crash: %v chunks resumed, %v fetched; the registry sent %d bytes (with what was in flight to the dead peer)", resumed, fetched, reg.Sent()-sent)
	img, err := cl.GetImage(ctx, kit.NS, "resume-v1")
	if err != nil || img.Digest != pushed.Config.Digest || !hasBlob(host, img.Digest) {
		t.Fatalf("image %+v %v", img, err)
	}
	if left, _ := os.ReadDir(partialDir(host)); len(left) != 0 {
		t.Fatalf("the finished pull left %d partial files", len(left))
	}
	select {
	case <-deployed: // answered either way: the host died under it
	case <-ctx.Done():
		t.Fatal("the deploy never answered")
	}
}
