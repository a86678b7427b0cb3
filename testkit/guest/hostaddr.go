package guest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// HostAddr gives the host, until the test ends, an address its guests
// reach: 10.219.<n>.1 on a bridge of its own (svcguest<n>, no ports), for
// a test's stand-in of a service outside (a guest's QEMU reaches no host
// loopback address: the peers' guard drops it). The address is local to
// the machine: nothing is sent anywhere. n tells tests apart (1 to 254).
// It needs root, as libvirt does; without, the test is skipped (or fails
// where SVC_REQUIRE_LIBVIRT=1).
func HostAddr(t testing.TB, n int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "a host address for guests needs root")
	}
	if n < 1 || n > 254 {
		t.Fatalf("HostAddr: n %d: 1 to 254", n)
	}
	link, addr := fmt.Sprintf("svcguest%d", n), fmt.Sprintf("10.219.%d.1", n)
	ip := func(args ...string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	_ = ip("link", "delete", link) // left by a test that was killed
	for _, args := range [][]string{
		{"link", "add", link, "type", "bridge"},
		{"addr", "add", addr + "/32", "dev", link},
		{"link", "set", link, "up"},
	} {
		if err := ip(args...); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if err := ip("link", "delete", link); err != nil {
			t.Log(err)
		}
	})
	return addr
}
