package guest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// RequireLibvirt skips the test when libvirtd or the mini-linux image is not
// there, unless SVC_REQUIRE_LIBVIRT=1 (as in CI), where it fails instead. It
// returns the path of the image.
func RequireLibvirt(t testing.TB) string {
	t.Helper()
	image := os.Getenv("SVC_TEST_IMAGE")
	if image == "" {
		_, file, _, _ := runtime.Caller(0)
		image = filepath.Join(filepath.Dir(file), "..", "..", "build", "mini-linux.qcow2")
	}
	miss := func(why string) {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") == "1" {
			t.Fatalf("%s (SVC_REQUIRE_LIBVIRT=1)", why)
		}
		t.Skipf("%s: run scripts/libvirt-up.sh and make image", why)
	}
	if _, err := os.Stat(image); err != nil {
		miss("no guest image at " + image)
	}
	d, err := hypervisor.NewLibvirt(hypervisor.LibvirtConfig{Dir: t.TempDir(), Prefix: "svc.probe."})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.Probe(ctx); err != nil {
		miss("libvirtd does not answer: " + err.Error())
	}
	return image
}

// FreePort returns a TCP port that is free on addr right now.
func FreePort(t testing.TB, addr string) int {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
