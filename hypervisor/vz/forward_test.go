package vz

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/guest"
)

// echoGuest is a guest's TCP port that answers each line with "echo: line".
func echoGuest(t *testing.T) (netip.Addr, int) {
	t.Helper()
	a := guest.Serve(t, "127.0.0.1:0", func(c net.Conn) {
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			fmt.Fprintf(c, "echo: %s\n", sc.Text())
		}
	})
	return netip.MustParseAddr("127.0.0.1"), a.Port
}

// Many connections at once reach the guest's port through the node's
// port; without a guest address a connection is closed at once; the end
// of ctx closes the port.
func TestForward_carries_connections_to_the_guest(t *testing.T) {
	ip, guestPort := echoGuest(t)
	var mu sync.Mutex
	known := true
	lookup := func() (netip.Addr, bool) {
		mu.Lock()
		defer mu.Unlock()
		return ip, known
	}
	hostPort := guest.FreePort(t, "127.0.0.1")
	ctx, cancel := context.WithCancel(context.Background())
	done, err := Forward(ctx, "127.0.0.1", hypervisor.Forward{HostPort: hostPort, GuestPort: guestPort}, lookup, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort))
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "hello %d\n", i)
			line, err := bufio.NewReader(c).ReadString('\n')
			if want := fmt.Sprintf("echo: hello %d\n", i); err != nil || line != want {
				errs <- fmt.Errorf("connection %d read %q, %v; want %q", i, line, err, want)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	mu.Lock()
	known = false
	mu.Unlock()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("without a guest address: read %d, %v; want the connection closed", n, err)
	}
	c.Close()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the forward ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the forward did not end with its context")
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the port still takes connections")
	}
}

func TestForward_port_taken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	none := func() (netip.Addr, bool) { return netip.Addr{}, false }
	if _, err := Forward(context.Background(), "127.0.0.1", hypervisor.Forward{HostPort: port, GuestPort: 22}, none, nil); err == nil {
		t.Fatal("a taken port was forwarded")
	}
}
