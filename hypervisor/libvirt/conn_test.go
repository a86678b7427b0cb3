package libvirt

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/testkit/peerclaim"
)

// The driver's calls go over its connections in turn (libvirtd serves at
// most 5 calls of one connection at once); a connection that was closed is
// dialled again, and concurrent calls all get an answer.
func TestDriver_calls_take_the_connections_in_turn(t *testing.T) {
	if _, err := os.Stat(DefaultSocket); err != nil {
		if os.Getenv("SVC_REQUIRE_LIBVIRT") != "" {
			t.Fatalf("libvirtd: %v", err)
		}
		t.Skip("no libvirtd")
	}
	peerclaim.For(t, peerclaim.Peer("hvconn"))
	d, err := New(Config{Dir: t.TempDir(), Prefix: hypervisor.DomainPrefix("hvconn")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	var got []*golibvirt.Libvirt
	for range 2 * connections {
		l, err := d.conn()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	seen := map[*golibvirt.Libvirt]bool{}
	for i, l := range got {
		seen[l] = true
		if next := got[(i+connections)%len(got)]; next != l {
			t.Fatalf("call %d and call %d took different connections", i, i+connections)
		}
	}
	if len(seen) != connections {
		t.Fatalf("%d calls took %d connections, want %d", len(got), len(seen), connections)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range got {
		if l.IsConnected() {
			t.Fatal("a connection is still open after Close")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 3*connections)
	for i := range errs {
		wg.Go(func() { _, errs[i] = d.List(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d after Close: %v", i, err)
		}
	}
}
