package templates

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/testkit/guest"
)

func TestSSHBanner_cases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		ok     bool
	}{
		{"an SSH server", "SSH-2.0-dropbear_2022.83\r\n", true},
		{"another server", "HTTP/1.1 400 Bad Request\r\n", false},
		{"a port that closes at once (slirp before the guest listens)", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := guest.Serve(t, "127.0.0.1:0", func(c net.Conn) { _, _ = c.Write([]byte(tc.answer)) })
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := SSHBanner(ctx, addr.String())
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if !tc.ok && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a wait that never saw a banner ends with %v, not its deadline", err)
			}
		})
	}
}

// A template's build holds its memory and its disk's boot room on the
// node's disk first: where they do not fit above the floor, nothing boots,
// and the build says why.
func TestManager_build_holds_its_room(t *testing.T) {
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := images.Put(context.Background(), strings.NewReader("a tiny disk"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	drv := fake.New(hypervisor.DomainPrefix("n1"))
	drv.SetMemoryDir(t.TempDir())
	disk := diskbudget.New(diskbudget.Config{Dir: t.TempDir(), Floor: 1 << 30, Name: "n1", Free: func() (int64, error) { return 3 << 30, nil }})
	m := New(Config{Name: "n1", FSM: raftfsm.NewFSM(nil), Driver: drv, Images: images, Dir: t.TempDir(), Max: 1, Disk: disk,
		GuestReady: func(context.Context, string) error { return nil }})
	err = m.build(context.Background(), raftfsm.Shape{ImageDigest: d, ImageFormat: "raw", CPU: 1, MemoryBytes: 4 << 30})
	if !errors.Is(err, diskbudget.ErrNoRoom) || !strings.Contains(err.Error(), "kept free") {
		t.Fatalf("a 4 GiB template with 2 GiB of room: %v", err)
	}
	if calls := drv.Calls(); len(calls) != 0 {
		t.Fatalf("the driver was called: %v", calls)
	}
}

// A restarted peer takes up the templates its last run left while hot
// pools may already ask to restore from them (they wait for Loaded; the
// race detector watches the rest): once Loaded is closed, the template
// restores.
func TestManager_load_then_restore(t *testing.T) {
	images, err := imagestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := images.Put(context.Background(), strings.NewReader("a tiny disk"), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	drv := fake.New(hypervisor.DomainPrefix("n1"))
	drv.SetMemoryDir(t.TempDir())
	cfg := Config{Name: "n1", FSM: raftfsm.NewFSM(nil), Driver: drv, Images: images, Dir: t.TempDir(), Max: 1,
		GuestReady: func(context.Context, string) error { return nil }}
	sh := raftfsm.Shape{ImageDigest: d, ImageFormat: "raw", CPU: 1, MemoryBytes: 64 << 20}
	if err := New(cfg).build(context.Background(), sh); err != nil {
		t.Fatal(err)
	}
	m := New(cfg) // the next run of the peer
	spec := func(i int) hypervisor.Spec {
		return hypervisor.Spec{Name: fmt.Sprintf("%sguest-%d", hypervisor.DomainPrefix("n1"), i), CPU: 1, MemoryMiB: 64, BaseImage: images.Path(d), BaseFormat: "raw"}
	}
	go func() {
		m.load(context.Background())
		m.markLoaded()
	}()
	for i := 0; ; i++ {
		select {
		case <-m.Loaded():
		default:
			_, _ = m.RestoreShape(context.Background(), sh.Key(), spec(i), "a hot guest")
			continue
		}
		break
	}
	if ok, err := m.RestoreShape(context.Background(), sh.Key(), spec(-1), "a hot guest"); !ok || err != nil {
		t.Fatalf("a restore once the templates are loaded: %v %v", ok, err)
	}
}
