package cluster

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/node/hostadmin"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/disktest"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Disks whose header names a host file (a qcow2 external data file or
// backing file), and files that are not the disk they claim to be, are
// refused on every way into the cluster with a 400 that says why, and
// leave nothing behind: no record, no blob, no staging or partial file.

// padded is b followed by zeros up to 1 MiB, the smallest raw disk.
func padded(b []byte) []byte { return append(b, make([]byte, max(0, 1<<20-len(b)))...) }

// noImages fails the test if the namespace lists an image.
func noImages(t *testing.T, ctx context.Context, cl *api.Client) {
	t.Helper()
	imgs, err := cl.ListImages(ctx, kit.NS)
	if err != nil || len(imgs) != 0 {
		t.Fatalf("images %+v %v, want none", imgs, err)
	}
}

func TestHostileDisk_upload(t *testing.T) {
	disktest.RequireQemuImg(t)
	c := testcluster.New(t, 1, testcluster.Options{})
	c.WaitLeader()
	m := c.Members[0]
	cl := c.Client(m)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	withData := disktest.Read(t, disktest.Create(t, "qcow2", "16M"))
	cases := []struct {
		name string
		file []byte
		want string
	}{
		{"data file /etc/passwd", disktest.WithDataFile(t, "/etc/passwd"), `external data file ("/etc/passwd")`},
		{"data file /etc/shadow", disktest.WithDataFile(t, "/etc/shadow"), `external data file ("/etc/shadow")`},
		{"data file: the cluster's admin token", disktest.WithDataFile(t, filepath.Join(m.DataDir, hostadmin.AdminTokenFile)), "external data file"},
		{"backing file /etc/passwd", disktest.WithBacking(t, "/etc/passwd", "raw"), `backing file ("/etc/passwd")`},
		{"backing file through a json: name", disktest.WithBacking(t, `json:{"file.driver":"file","file.filename":"/etc/shadow"}`, "raw"), "backing file"},
		{"vmdk descriptor naming /etc/shadow", padded([]byte("# Disk DescriptorFile\nversion=1\nRW 8 FLAT \"/etc/shadow\" 0\n")), "vmdk"},
		{"a qcow2 cut short", withData[:100_000], "cut short"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := blobs(t, m)
			_, err := cl.UploadImage(ctx, kit.NS, "hostile", bytes.NewReader(tc.file), int64(len(tc.file)))
			if api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("upload: %v, want 400 saying %q", err, tc.want)
			}
			noImages(t, ctx, cl)
			if after, _ := blobs(t, m); after != before || len(kit.Leftovers(m)) != 0 {
				t.Fatalf("blobs %d -> %d, leftovers %v", before, after, kit.Leftovers(m))
			}
		})
	}
}

func TestHostileDisk_registry(t *testing.T) {
	disktest.RequireQemuImg(t)
	reg := registrytest.Start(t, registrytest.Options{})
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	cl := c.Client(c.Members[0])
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if _, err := cl.SetRegistryCredential(ctx, kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
	// svc disks (raw in the registry) whose content is a hostile qcow2, and
	// KubeVirt containerDisks whose file is one.
	kit.PushDisk(t, reg, reg.Host+"/evil/datafile:v1", padded(disktest.WithDataFile(t, "/etc/passwd")))
	kit.PushDisk(t, reg, reg.Host+"/evil/backing:v1", padded(disktest.WithBacking(t, "/etc/passwd", "raw")))
	kit.PushContainerDisk(t, reg, reg.Host+"/evil/cd-datafile:v1", disktest.Write(t, "d.qcow2", disktest.WithDataFile(t, "/etc/shadow")))
	kit.PushContainerDisk(t, reg, reg.Host+"/evil/cd-backing:v1", disktest.Write(t, "b.qcow2", disktest.WithBacking(t, "/etc/shadow", "raw")))
	truncated := disktest.Read(t, disktest.Create(t, "qcow2", "16M"))[:100_000]
	kit.PushContainerDisk(t, reg, reg.Host+"/evil/cd-truncated:v1", disktest.Write(t, "t.qcow2", truncated))

	host := c.Members[1]
	for _, tc := range []struct{ ref, want string }{
		{"evil/datafile:v1", "not the raw disk it is declared as"},
		{"evil/backing:v1", "not the raw disk it is declared as"},
		{"evil/cd-datafile:v1", `external data file ("/etc/shadow")`},
		{"evil/cd-backing:v1", `backing file ("/etc/shadow")`},
		{"evil/cd-truncated:v1", "cut short"},
	} {
		t.Run("deploy "+tc.ref, func(t *testing.T) {
			// A 503 (a leadership change while the pull's writes were in
			// flight) is the API's "retry": a client sends the deploy
			// again, as this one does, a bounded number of times; what the
			// refused attempts left is checked below with the rest.
			var err error
			for attempt := 1; attempt <= 3; attempt++ {
				_, err = cl.DeployVM(ctx, kit.NS, api.DeployRequest{Image: reg.Host + "/" + tc.ref, Node: host.Name})
				if api.CodeOf(err) != http.StatusServiceUnavailable {
					break
				}
				t.Logf("attempt %d: %v", attempt, err)
			}
			if api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("deploy: %v, want 400 saying %q", err, tc.want)
			}
			noImages(t, ctx, cl)
			if vms, _ := cl.ListVMs(ctx, kit.NS); len(vms) != 0 {
				t.Fatalf("VMs %+v", vms)
			}
			for _, m := range c.Members {
				if n, _ := blobs(t, m); n != 0 || len(kit.Leftovers(m)) != 0 {
					t.Fatalf("%s holds %d blobs and %v", m.Name, n, kit.Leftovers(m))
				}
			}
		})
	}

	// A pull from a remote catalog is a job: it fails, saying why.
	if _, err := cl.SetRemoteCatalogs(ctx, []string{reg.Host + "/evil/datafile"}); err != nil {
		t.Fatal(err)
	}
	acc, err := cl.PullRemoteImage(ctx, kit.NS, "datafile-v1", "")
	if err != nil {
		t.Fatal(err)
	}
	job := kit.WaitJob(t, c, cl, acc.JobName)
	if job.State != "Failed" || !strings.Contains(job.Message, "not the raw disk it is declared as") {
		t.Fatalf("pull job %+v", job)
	}
	noImages(t, ctx, cl)
	for _, m := range c.Members {
		if n, _ := blobs(t, m); n != 0 || len(kit.Leftovers(m)) != 0 {
			t.Fatalf("%s holds %d blobs and %v after the pull job", m.Name, n, kit.Leftovers(m))
		}
	}
}

// A peer checks a blob it fetches from another peer as if a user had
// uploaded it: a hostile blob planted on one peer (as an older version
// would have taken it) never reaches another.
func TestHostileDisk_peer_blob(t *testing.T) {
	disktest.RequireQemuImg(t)
	c := testcluster.New(t, 2, testcluster.Options{})
	c.WaitLeader()
	holder, other := c.Members[0], c.Members[1]
	cl := c.Client(holder)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name, want string
		disk       []byte
	}{
		{"planted-datafile", "external data file", disktest.WithDataFile(t, "/etc/passwd")},
		{"planted-backing", "backing file", disktest.WithBacking(t, "/etc/passwd", "raw")},
		{"planted-truncated", "cut short", disktest.Read(t, disktest.Create(t, "qcow2", "16M"))[:100_000]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			digest := sha(tc.disk)
			if err := os.WriteFile(holder.Peer.Images().Path(digest), tc.disk, 0o600); err != nil {
				t.Fatal(err)
			}
			img := raftfsm.Image{
				Name: tc.name, Namespace: kit.NS, Digest: digest, SizeBytes: int64(len(tc.disk)), VirtualSize: 1 << 20,
				Format: "qcow2", Arch: runtime.GOARCH, SourceType: "userUpload", CreatedAt: time.Now().UTC().Truncate(time.Second),
			}
			if _, err := holder.Peer.Apply(ctx, raftfsm.TypeImageCreate, raftfsm.ImageCreate{Image: img, Holder: holder.Name}); err != nil {
				t.Fatal(err)
			}
			_, err := cl.DeployVM(ctx, kit.NS, api.DeployRequest{Image: tc.name, Node: other.Name})
			if api.CodeOf(err) != http.StatusBadRequest || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("deploy on the peer without the blob: %v, want 400 saying %q", err, tc.want)
			}
			if hasBlob(other, digest) || len(kit.Leftovers(other)) != 0 {
				t.Fatalf("%s kept the blob (%v) or %v", other.Name, hasBlob(other, digest), kit.Leftovers(other))
			}
		})
	}
}
