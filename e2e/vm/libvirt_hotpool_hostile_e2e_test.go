package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/peer"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/testcluster"
)

// imageWithBootStep is mini-linux with a boot step of its own
// (/data/boot.sh on its FAT disk, which its init runs as root) on a disk
// of size bytes as the guest sees it: an image a member could make and
// upload. Made on scratch files, never from a host file.
func imageWithBootStep(t *testing.T, image, step string, size int64) string {
	t.Helper()
	dir := t.TempDir()
	raw, script, out := filepath.Join(dir, "disk.raw"), filepath.Join(dir, "boot.sh"), filepath.Join(dir, "disk.qcow2")
	if err := os.WriteFile(script, []byte(step), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{
		{"qemu-img", "convert", "-q", "-f", "qcow2", "-O", "raw", image, raw},
		{"mcopy", "-i", raw, script, "::boot.sh"},
		{"truncate", "-s", fmt.Sprint(size), raw},
		{"qemu-img", "convert", "-q", "-f", "raw", "-O", "qcow2", raw, out},
	} {
		if b, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", cmd, err, b)
		}
	}
	return out
}

// Two images a member made, each warm with a hot pool, on a node whose
// data dir is a small file system of the test's own:
//   - "filler" writes 620 MB to its 768 MiB disk once a restored copy of
//     it has its own identity, so every guest of its pool does. Before, each
//     pooled guest's disk was held in no budget: free space went to 0 and
//     the namespace's disk use stayed 0. Now a pooled guest's disk is held
//     for its whole size, so the pool keeps the one guest the room holds
//     (not its 2), free space stays above the floor while it writes, the
//     room is promised to it, it counts in the namespace's disk use, and it
//     gives the room back to an upload that needs it.
//   - "stuck" has an identity step that never ends (its agent never
//     reports the step's exit). Before, the fill waited for ever and no
//     pool of the node refilled again; now the fill gives up at its bound,
//     the guest is destroyed, and the other pool fills.
func TestLibvirtHotPool_hostile_images(t *testing.T) {
	image := guest.RequireLibvirt(t)
	const mib = 1 << 20
	const floor = 200 * mib
	dir := smallDisk(t, 1792*mib)
	c := testcluster.New(t, 1, testcluster.Options{Libvirt: true, Prefix: "hothostile", Subnet: 25, Templates: 2, Dir: dir,
		Capacity:  raftfsm.Capacity{CPU: 8, MemoryBytes: 8 << 30},
		Configure: func(_ int, cfg *peer.Config) { cfg.DiskFloor, cfg.HotFillTimeout = floor, 20*time.Second }})
	m := c.Members[0]
	cl := c.Client(m)
	// The filler writes once it is a guest of its own: when the identity
	// step of a restored copy gives it a new machine id (the template,
	// saved before any identity step, never writes).
	filler := imageWithBootStep(t, image, "(m=$(cat /etc/machine-id); while [ \"$(cat /etc/machine-id)\" = \"$m\" ]; do sleep 1; done; dd if=/dev/zero of=/dev/vda bs=1M seek=80 count=620 conv=fsync) &\n", 768*mib)
	stuck := imageWithBootStep(t, image, "printf '#!/bin/sh\\nexec sleep 100000\\n' >/usr/lib/svc/identity.new\nchmod 755 /usr/lib/svc/identity.new\nmv /usr/lib/svc/identity.new /usr/lib/svc/identity\n", 64*mib)
	kit.Upload(t, cl, "filler", filler)
	kit.Upload(t, cl, "stuck", stuck)

	// The free space of the data dir, sampled throughout.
	free := func() int64 {
		f, err := diskbudget.FreeBytes(dir)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var least atomic.Int64
	least.Store(free())
	sctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if f := free(); f < least.Load() {
				least.Store(f)
			}
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	defer func() { stop(); wg.Wait() }()

	for _, cfg := range []api.VMConfig{
		{Name: "stuck", Image: "stuck", CPU: 1, Memory: 0.25, Warm: true, Hot: 1},
		{Name: "filler", Image: "filler", CPU: 1, Memory: 0.25, Warm: true, Hot: 2},
	} {
		if _, err := cl.CreateVMConfig(kit.Ctx(t), kit.NS, cfg); err != nil {
			t.Fatal(err)
		}
	}
	kit.WaitWarmFor(t, c, cl, kit.TemplateWait, "stuck", m.Name)
	kit.WaitWarmFor(t, c, cl, kit.TemplateWait, "filler", m.Name)

	// The stuck step fails at its bound, and the filler's pool fills.
	kit.WaitHotFor(t, c, cl, 3*time.Minute, "filler", m.Name, 1)
	c.WaitFor("the stuck guest's fill given up", 2*time.Minute, func() error {
		if n := kit.Metric(t, m, `svc_hot_fills_total{result="failed"}`); n < 1 {
			return fmt.Errorf("%v failed fills", n)
		}
		return nil
	})
	if got, _ := cl.GetVMConfig(kit.Ctx(t), kit.NS, "stuck"); got.HotNodes[m.Name] != 0 {
		t.Fatalf("a guest whose identity step never ended is pooled: %v", got.HotNodes)
	}

	// The filler's guest writes its disk: the room it may take is
	// promised while it does, and free space never passes the floor.
	n, _ := m.Peer.FSM().Node(m.Name)
	if len(n.Hot) != 1 {
		t.Fatalf("hot guests %+v", n.Hot)
	}
	disk, fillerKey := m.Libvirt.DiskPath(n.Hot[0].Domain), n.Hot[0].Key
	c.WaitFor("the pooled guest's writes", 3*time.Minute, func() error {
		if a := diskbudget.Allocated(disk); a < 600*mib {
			return fmt.Errorf("its disk holds %d MiB", a>>20)
		}
		return nil
	})
	room, promised := kit.Metric(t, m, "svc_disk_room_bytes"), kit.Metric(t, m, "svc_disk_promised_bytes")
	t.Logf("the pooled guest wrote %d MiB: %d MiB free at the least (floor %d MiB), room %.0f MiB, promised %.0f MiB",
		diskbudget.Allocated(disk)>>20, least.Load()>>20, floor>>20, room/mib, promised/mib)
	if least.Load() < floor {
		t.Fatalf("free space went to %d MiB, under the floor of %d MiB", least.Load()>>20, floor>>20)
	}
	if promised <= 0 || room < 0 {
		t.Fatalf("room %.0f, promised %.0f while a pooled guest may still write", room, promised)
	}
	q, err := cl.GetQuota(kit.Ctx(t), kit.NS)
	if err != nil {
		t.Fatal(err)
	}
	if q.PooledDisk != 0.75 || q.Used.Disk < 0.75 {
		t.Fatalf("the namespace's use %+v, want its pooled guest's 0.75 GiB counted", q)
	}
	if got, _ := cl.GetVMConfig(kit.Ctx(t), kit.NS, "filler"); got.HotNodes[m.Name] != 1 {
		t.Fatalf("filler's pool %v: the room holds one of its guests", got.HotNodes)
	}

	// An upload that needs the room the pooled guest holds gets it: the
	// guest is destroyed, the disk keeps its floor.
	need := int64(room) + 500*mib
	if _, err := cl.UploadImage(kit.Ctx(t), kit.NS, "big", zeros(need), need); err != nil {
		t.Fatalf("an upload of %d MiB (room %.0f MiB, the pool yields 0.75 GiB): %v", need>>20, room/mib, err)
	}
	kit.WaitHotFor(t, c, cl, time.Minute, "filler", m.Name, 0)
	doms, err := m.Libvirt.List(kit.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range doms {
		if strings.HasPrefix(d.Name, hypervisor.HotPrefix(m.Name)+fillerKey+".") {
			t.Fatalf("filler's hot domain %s left after the pool gave its room back", d.Name)
		}
	}
	if f := least.Load(); f < floor {
		t.Fatalf("free space went to %d MiB, under the floor", f>>20)
	}
}
