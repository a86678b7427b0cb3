package kit

import (
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/testcluster"
)

// Metric reads one sample of a member's /metrics (0 when absent).
func Metric(t *testing.T, m *testcluster.Member, sample string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + m.Peer.APIAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

func Ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// TinyVM uploads a small disk and deploys vm on node, returning it.
func TinyVM(t *testing.T, cl *api.Client, vm, node string) api.VM {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.GetImage(ctx, NS, "tiny"); err != nil {
		disk := filepath.Join(t.TempDir(), "disk.img")
		if err := os.WriteFile(disk, make([]byte, 2<<20), 0o600); err != nil {
			t.Fatal(err)
		}
		Upload(t, cl, "tiny", disk)
	}
	out, err := cl.DeployVM(ctx, NS, api.DeployRequest{Name: vm, Image: "tiny", CPU: Intp(1), Node: node})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// RandomImage writes a raw disk of size random bytes (nothing of it is a
// hole: all of it travels).
func RandomImage(t testing.TB, size int64) string {
	t.Helper()
	p := t.TempDir() + "/random.raw"
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // every image its own content
	if _, err := io.CopyN(f, rand.NewChaCha8(seed), size); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// WaitRunning waits up to timeout until the VM runs.
func WaitRunning(t *testing.T, c *testcluster.Cluster, cl *api.Client, name string, timeout time.Duration) api.VM {
	t.Helper()
	var vm api.VM
	c.WaitFor("vm "+name+" Running", timeout, func() error {
		var err error
		vm, err = cl.GetVM(Ctx(t), NS, name)
		if err != nil || vm.Status != api.StatusRunning {
			return fmt.Errorf("%+v %v", vm, err)
		}
		return nil
	})
	return vm
}

const NS = api.DefaultNamespace

// TinyImage makes a small qcow2 file with qemu-img.
func TinyImage(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") == "1" {
			t.Fatal("qemu-img missing")
		}
		t.Skip("qemu-img missing: run scripts/install-deps.sh")
	}
	p := filepath.Join(t.TempDir(), "tiny.qcow2")
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "qcow2", p, "16M").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	return p
}

func Upload(t testing.TB, cl *api.Client, name, path string) api.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	img, err := cl.UploadImage(context.Background(), NS, name, f, st.Size())
	if err != nil {
		t.Fatalf("upload %s: %v", name, err)
	}
	return img
}

func Intp(i int) *int { return &i }

func Floatp(f float64) *float64 { return &f }

func Boolp(b bool) *bool { return &b }

func NodeByName(t *testing.T, cl *api.Client, name string) api.Node {
	t.Helper()
	nodes, err := cl.ListNodes(Ctx(t), NS, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no node %s", name)
	return api.Node{}
}
