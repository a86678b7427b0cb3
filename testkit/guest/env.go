package guest

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor/libvirt"
)

// RequireLibvirt skips the test when libvirtd or the mini-linux image is not
// there, unless SVC_REQUIRE_LIBVIRT=1 (as in CI), where it fails instead. It
// returns the path of the image ($SVC_TEST_IMAGE, or build/mini-linux.qcow2).
func RequireLibvirt(t testing.TB) string {
	t.Helper()
	image := built(t, "SVC_TEST_IMAGE", "mini-linux.qcow2")
	d, err := libvirt.New(libvirt.Config{Dir: TempDir(t), Prefix: "svc.probe."})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.Probe(ctx); err != nil {
		missing(t, "libvirtd does not answer: "+err.Error())
	}
	return image
}

// RequireISO is RequireLibvirt for the mini-linux installer ISO: it returns
// the ISO's path ($SVC_TEST_ISO, or build/mini-linux.iso).
func RequireISO(t testing.TB) string {
	t.Helper()
	RequireLibvirt(t)
	return built(t, "SVC_TEST_ISO", "mini-linux.iso")
}

// built is the path of a file 'make image' builds, named by env or in build/.
func built(t testing.TB, env, file string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		_, src, _, _ := runtime.Caller(0)
		p = filepath.Join(filepath.Dir(src), "..", "..", "build", file)
	}
	if _, err := os.Stat(p); err != nil {
		missing(t, "no "+file+" at "+p)
	}
	return p
}

// missing skips the test, or fails it where SVC_REQUIRE_LIBVIRT=1.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("SVC_REQUIRE_LIBVIRT") == "1" {
		t.Fatalf("%s (SVC_REQUIRE_LIBVIRT=1)", why)
	}
	t.Skipf("%s: run scripts/libvirt-up.sh and make image", why)
}

// TempDir is t.TempDir made searchable by others (mode 0711), along with
// the test's own temporary directory it is in: QEMU runs as an unprivileged
// user, and reaches the disks of a data dir made there.
func TempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Serve listens on addr (host:port; port 0 for any) until the test ends
// and runs handle on each connection in a goroutine of its own, closing
// the connection after it: a stand-in for a guest's or a hypervisor's
// TCP service. It returns the address listened on.
func Serve(t testing.TB, addr string, handle func(net.Conn)) *net.TCPAddr {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr)
}
