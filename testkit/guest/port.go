package guest

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/svc-project/svc/api"
)

// portTries bounds how many ports FreePort tries before it gives up.
const portTries = 200

// FreePort returns a TCP port free on addr that stays the test's until it
// ends, for a hypervisor to listen on later. A port the kernel picked
// (port 0) would not do: once released, the kernel may hand it to any
// outgoing connection of any process before QEMU binds it. So the port is
// taken outside the kernel's ephemeral range and outside svc's own VM
// port ranges (which test peers allocate from), and it is held by a file
// lock that other test processes, picking through FreePort too, respect.
func FreePort(t testing.TB, addr string) int {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "svc-test-ports")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	candidates := portCandidates(ephemeralRange())
	for range portTries {
		port := candidates[rand.IntN(len(candidates))]
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			_ = f.Close() // another test holds it
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.Itoa(port)))
		if err != nil {
			_ = f.Close() // something outside the tests listens there
			continue
		}
		_ = l.Close()
		t.Cleanup(func() { _ = f.Close() })
		return port
	}
	t.Fatalf("no free port on %s in %d tries", addr, portTries)
	return 0
}

// portCandidates lists the ports from 10000 up that lie neither in the
// kernel's ephemeral range [lo, hi] nor in svc's VM port ranges.
func portCandidates(lo, hi int) []int {
	var out []int
	for port := 10000; port <= 65535; port++ {
		switch {
		case port >= lo && port <= hi,
			port >= api.ForwardPortMin && port <= api.ForwardPortMax,
			port >= api.VNCPortMin && port <= api.VNCPortMax:
			continue
		}
		out = append(out, port)
	}
	return out
}

// ephemeralRange is the kernel's range for ports it picks itself: Linux's
// setting, or the IANA range where there is none to read (macOS).
func ephemeralRange() (lo, hi int) {
	lo, hi = 49152, 65535
	f, err := os.Open("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	defer f.Close()
	var l, h int
	if _, err := fmt.Fscan(bufio.NewReader(f), &l, &h); err != nil || l > h {
		return lo, hi
	}
	return l, h
}
