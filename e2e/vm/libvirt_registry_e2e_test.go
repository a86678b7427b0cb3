package vm

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/imagestore/rawdisk"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/registrytest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// leadOn hands the leadership over until m leads (a bounded number of times).
func leadOn(t *testing.T, c *testcluster.Cluster, m *testcluster.Member) {
	t.Helper()
	for range 10 {
		l := c.WaitLeader()
		if l == m {
			return
		}
		if err := l.Peer.Store().HandOver(kit.Ctx(t)); err != nil {
			t.Logf("hand over from %s: %v", l.Name, err)
		}
	}
	t.Fatalf("%s never became the leader", m.Name)
}

func setCredential(t *testing.T, cl *api.Client, reg *registrytest.Server) {
	t.Helper()
	if _, err := cl.SetRegistryCredential(kit.Ctx(t), kit.NS, api.RegistryCredentialRequest{Server: reg.Host, Username: reg.Username, Password: reg.Password, AllowInsecure: true}); err != nil {
		t.Fatal(err)
	}
}

var pushedRE = regexp.MustCompile(`(\d+) chunks, (\d+) sent`)

// chunksSent reads "N chunks, M sent" from a push job's message.
func chunksSent(t *testing.T, j api.Job) (total, sent int) {
	t.Helper()
	m := pushedRE.FindStringSubmatch(j.Message)
	if m == nil {
		t.Fatalf("push message %q", j.Message)
	}
	total, _ = strconv.Atoi(m[1])
	sent, _ = strconv.Atoi(m[2])
	return total, sent
}

// The flow on real VMs: a VM with a file under /data is pushed
// (its host killed midway, the push run again resumes), deployed from the
// reference on another peer of a 3-peer cluster and on a second cluster:
// the file is there; a push after a small change sends a few chunks.
func TestLibvirtCluster_push_deploy_reference(t *testing.T) {
	image := guest.RequireLibvirt(t)
	reg := registrytest.Start(t, registrytest.Options{})
	a := testcluster.New(t, 3, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "rega", Subnet: 3})
	host, other := a.Members[0], a.Members[2]
	cl := a.Client(a.Members[1])
	kit.Upload(t, cl, "mini-linux", image)
	setCredential(t, cl, reg)
	src := kit.RealDeploy(t, a, api.DeployRequest{Image: "mini-linux", Name: "src", Node: host.Name})
	kit.GuestRun(t, a, src, "echo pushed > /data/proof && sync")

	// The first push is slowed and its host killed midway; the host leads
	// then, so the cluster loses its leader too.
	leadOn(t, a, host)
	ref := reg.Host + "/team/src:v1"
	reg.SetRate(512 << 10) // per connection: with 4 uploads at a time, 6 MiB in about 3 s of a push of about 19 MB
	job, err := cl.PushVM(kit.Ctx(t), kit.NS, "src", ref)
	if err != nil {
		t.Fatal(err)
	}
	a.WaitFor("the push sends chunks", kit.PushWait, func() error {
		if j, err := cl.GetJob(kit.Ctx(t), kit.NS, job.JobName); err == nil && (j.State == api.JobFailed || j.State == api.JobSucceeded) {
			t.Fatalf("the push ended before it could be killed: %+v", j)
		}
		if reg.Received() < 6<<20 { // a few whole chunks (1 MiB each, 4 uploads at a time)
			return fmt.Errorf("%d bytes received", reg.Received())
		}
		return nil
	})
	a.Crash(host)
	reg.SetRate(0)
	a.Restart(host)
	a.WaitCaughtUp(host)
	j := kit.WaitJobFor(t, a, cl, job.JobName, kit.PushWait)
	if j.State != api.JobSucceeded {
		// The leader failed it while its peer was down: push again.
		if job, err = cl.PushVM(kit.Ctx(t), kit.NS, "src", ref); err != nil {
			t.Fatal(err)
		}
		j = kit.WaitJobFor(t, a, cl, job.JobName, kit.PushWait)
	}
	total, sent := chunksSent(t, j)
	t.Logf("push after the kill: %s", j.Message)
	if j.State != api.JobSucceeded || sent >= total {
		t.Fatalf("the push after the kill did not resume: %+v", j)
	}

	// Deployed from the reference on a peer that never had the VM.
	vm := kit.RealDeploy(t, a, api.DeployRequest{Image: ref, Name: "from-ref", Node: other.Name})
	if got := kit.GuestRun(t, a, vm, "cat /data/proof"); strings.TrimSpace(got) != "pushed" {
		t.Fatalf("from the reference: %q", got)
	}
	img, err := cl.GetImage(kit.Ctx(t), kit.NS, "src-v1")
	if err != nil || img.SourceType != "registry" || !strings.HasPrefix(img.Source, ref+"@sha256:") {
		t.Fatalf("image %+v %v", img, err)
	}

	// A small change pushed again: only the chunks it touched travel.
	kit.GuestRun(t, a, vm, "echo again > /data/proof2 && sync")
	before := reg.Received()
	job, err = cl.PushVM(kit.Ctx(t), kit.NS, "from-ref", reg.Host+"/team/src:v2")
	if err != nil {
		t.Fatal(err)
	}
	j = kit.WaitJobFor(t, a, cl, job.JobName, kit.PushWait)
	total2, sent2 := chunksSent(t, j)
	t.Logf("push after a small change: %s; the registry received %d bytes", j.Message, reg.Received()-before)
	if j.State != api.JobSucceeded || sent2*2 > total2 {
		t.Fatalf("push after a small change: %+v", j)
	}

	// A second, separate cluster deploys the reference.
	b := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "regb", Subnet: 4})
	bcl := b.Client(b.Members[0])
	setCredential(t, bcl, reg)
	vmB := kit.RealDeploy(t, b, api.DeployRequest{Image: reg.Host + "/team/src:v2", Name: "other-cluster"})
	if got := kit.GuestRun(t, b, vmB, "cat /data/proof /data/proof2"); strings.Join(strings.Fields(got), " ") != "pushed again" {
		t.Fatalf("on the second cluster: %q", got)
	}
}

// Registry images made by other tools deploy and boot: a KubeVirt
// containerDisk (the guest's qcow2 under /disk/), and a Tart-format image
// holding the guest's disk (as Mac users keep images), whose NVRAM is kept
// for vz hosts. (Split from TestLibvirtCluster_push_deploy_reference, which
// took 144 s with these two guests.)
func TestLibvirtCluster_container_disk_and_tart_images(t *testing.T) {
	image := guest.RequireLibvirt(t)
	reg := registrytest.Start(t, registrytest.Options{})
	b := testcluster.New(t, 1, testcluster.Options{Libvirt: true, DistinctIPs: true, Prefix: "regcd", Subnet: 26})
	bcl := b.Client(b.Members[0])
	setCredential(t, bcl, reg)

	// A KubeVirt containerDisk (the guest's qcow2 under /disk/) deploys and boots.
	cdRef := reg.Host + "/kubevirt/mini:1"
	kit.PushContainerDisk(t, reg, cdRef, image)
	cd := kit.RealDeploy(t, b, api.DeployRequest{Image: cdRef, Name: "container-disk"})
	if got := kit.GuestRun(t, b, cd, "cat /data/proof 2>&1 || echo absent"); !strings.Contains(got, "absent") {
		t.Fatalf("the containerDisk guest: %q", got)
	}
	if img, err := bcl.GetImage(kit.Ctx(t), kit.NS, "mini-1"); err != nil || img.SourceType != "registry" {
		t.Fatalf("containerDisk image %+v %v", img, err)
	}

	// The Tart image.
	tartRef := reg.Host + "/tart/minitart:1"
	pushTartOf(t, reg, tartRef, image)
	tv := kit.RealDeploy(t, b, api.DeployRequest{Image: tartRef, Name: "from-tart"})
	if got := kit.GuestRun(t, b, tv, "cat /data/proof 2>&1 || echo absent"); !strings.Contains(got, "absent") {
		t.Fatalf("the Tart guest: %q", got)
	}
	timg, ok := b.Members[0].Peer.FSM().Image(kit.NS, "minitart-1")
	if !ok || timg.Format != "raw" || timg.NVRAMDigest == "" || timg.OS != "" {
		t.Fatalf("Tart image record %+v", timg)
	}
	if blob, ok := b.Members[0].Peer.FSM().Blob(timg.NVRAMDigest); !ok || len(blob.Holders) == 0 || blob.SizeBytes != int64(len(tartNVRAM)) {
		t.Fatalf("the Tart image's NVRAM is not held: %+v", blob)
	}
}

// tartNVRAM is the NVRAM of the Tart image the tests push.
var tartNVRAM = []byte(strings.Repeat("EFI variables of a Tart image\n", 512))

// pushTartOf pushes the guest's disk (made raw) as a Tart image.
func pushTartOf(t *testing.T, reg *registrytest.Server, ref, qcow2 string) {
	t.Helper()
	raw := t.TempDir() + "/disk.raw"
	if err := rawdisk.FromQcow2(kit.Ctx(t), qcow2, raw); err != nil {
		t.Fatal(err)
	}
	disk, err := os.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	registrytest.PushTart(t, r, registrytest.TartImage{
		Config: registrytest.TartConfig{Version: 1, OS: "linux", Arch: runtime.GOARCH, CPUCount: 1, MemorySize: 512 << 20, MACAddress: "7e:5f:00:00:00:02"},
		Disk:   disk, NVRAM: tartNVRAM, LayerSize: 16 << 20,
	}, remote.WithAuth(&authn.Basic{Username: reg.Username, Password: reg.Password}), remote.WithTransport(reg.Transport()))
}
