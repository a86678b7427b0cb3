package vm

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/e2e/kit"
)

// A guest reaches the internet and the networks its host reaches, but not
// the host's loopback services (10.0.2.2 is the host's 127.0.0.1 to it) nor
// the peers' Raft and gossip ports: QEMU's user is kept from them by the
// peer's nftables guard. DNS to the host's resolver stays open.
func TestLibvirtCluster_guests_kept_from_host_services(t *testing.T) {
	c, _ := kit.LibvirtCluster(t, "lvpair", 20)
	a := c.Members[0]
	cl := c.Client(a)
	// A service on the host's loopback, as a database or a dev peer is.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_, _ = conn.Write([]byte("host service\n"))
			conn.Close()
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	vm, err := cl.DeployVM(kit.Ctx(t), kit.NS, api.DeployRequest{Image: "mini-linux", Name: "guarded", Node: a.Name, CPU: kit.Intp(1), Memory: kit.Floatp(0.25), Timeout: kit.Floatp(3)})
	if err != nil {
		t.Fatal(err)
	}
	out := kit.GuestRun(t, c, vm, "nc -w 3 10.0.2.2 "+port+" </dev/null && echo reached || echo refused")
	if !strings.Contains(out, "refused") || accepted.Load() != 0 {
		t.Fatalf("the guest reached the host's loopback service: %q (%d connections)", out, accepted.Load())
	}
	// The guard names this peer's ports, and QEMU's user.
	rules, err := exec.Command("nft", "list", "ruleset").CombinedOutput()
	if err != nil {
		t.Fatalf("nft: %v %s", err, rules)
	}
	_, raftPort, _ := net.SplitHostPort(a.Peer.RaftAddr())
	_, gossipPort, _ := net.SplitHostPort(a.Peer.GossipAddr())
	for _, want := range []string{"tcp dport " + raftPort + " drop", "udp dport " + gossipPort + " drop", "127.0.0.0/8 th dport != 53 drop"} {
		if !strings.Contains(string(rules), want) {
			t.Errorf("the guard lacks %q:\n%s", want, rules)
		}
	}
	// A clean stop keeps the guard while the peer's VMs run on (they outlive
	// it), and removes it from a peer that has none.
	b := c.Members[1]
	c.Stop(b)
	if tables := nftTables(t); strings.Contains(tables, guardTableOf(b.Name)+"\n") {
		t.Errorf("%s stopped with no VM and left its guard:\n%s", b.Name, tables)
	}
	c.Stop(a)
	if tables := nftTables(t); !strings.Contains(tables, guardTableOf(a.Name)+"\n") {
		t.Errorf("%s stopped with a VM running and took its guard away:\n%s", a.Name, tables)
	}
}

func nftTables(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "tables").CombinedOutput()
	if err != nil {
		t.Fatalf("nft: %v %s", err, out)
	}
	return string(out) + "\n"
}

// guardTableOf is the nftables table of peer's guard as nft lists it.
func guardTableOf(peer string) string {
	return "table inet svc_guard_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, peer)
}
