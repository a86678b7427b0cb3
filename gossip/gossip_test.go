package gossip

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/testkit/poll"
)

func start(t *testing.T, name string, gate netgate.Gate) *Gossip {
	t.Helper()
	g, err := New(Config{Name: name, Bind: "127.0.0.1", Local: true, Gate: gate, Report: Report{Addr: "127.0.0.1", CPU: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown() })
	return g
}

func TestGossip_join_report_and_death(t *testing.T) {
	gate := &netgate.Blocklist{}
	a := start(t, "a", gate)
	gateB := &netgate.Blocklist{}
	b := start(t, "b", gateB)
	if _, err := a.Join(context.Background(), []string{b.Addr()}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "b to see a", 15*time.Second, poll.True(func() bool { m, ok := b.Member("a"); return ok && m.State == StateAlive && m.Report.CPU == 4 }))

	if err := a.SetReport(Report{Addr: "127.0.0.1", CPU: 6, Problem: "hypervisor down"}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "b to see a's new report", 15*time.Second, poll.True(func() bool { m, _ := b.Member("a"); return m.Report.CPU == 6 && m.Report.Problem != "" }))

	// Cut a and b off from each other: each side refuses the other, as the
	// test cluster does (a one-sided cut lets TCP fallback probes through).
	gate.Set(b.Addr(), true)
	gateB.Set(a.Addr(), true)
	poll.For(t, "b to see a dead", 15*time.Second, poll.True(func() bool { m, _ := b.Member("a"); return m.State == StateDead }))
	gate.Set(b.Addr(), false)
	gateB.Set(a.Addr(), false)
	if _, err := a.Join(context.Background(), []string{b.Addr()}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "b to see a alive again", 15*time.Second, poll.True(func() bool { m, _ := b.Member("a"); return m.State == StateAlive }))
}

func TestGossip_join_nobody(t *testing.T) {
	a := start(t, "a", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := a.Join(ctx, []string{"127.0.0.1:1"}); err == nil {
		t.Fatal("joined a closed port")
	}
}

func TestReport_encode_limit(t *testing.T) {
	cases := []struct {
		name    string
		r       Report
		limit   int
		wantErr bool
	}{
		{"small", Report{Addr: "10.0.0.1", CPU: 2}, 512, false},
		{"long problem is cut", Report{Problem: strings.Repeat("x", 2000)}, 512, false},
		{"every field at its longest", Report{
			Addr: strings.Repeat("f", 39), APIAddr: "[" + strings.Repeat("f", 39) + "]:65535", RaftAddr: "[" + strings.Repeat("f", 39) + "]:65535",
			TLSPort: 65535, Arch: "arm64", Version: "v1.22.333-444-gabcdef0-dirty", Level: 999, CPU: 4096, Overcommit: 63.5, MemoryBytes: 1 << 50, GPU: 64,
			HasState: true, Problem: strings.Repeat("x", 2000), KeyEpoch: 1<<64 - 1, Hypervisor: "libvirt",
			SharedStorageWhy: strings.Repeat("y", 2000),
		}, 512, false},
		{"too small a limit", Report{Addr: "10.0.0.1"}, 5, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := c.r.encode(c.limit)
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v", err)
			}
			if err == nil {
				if _, err := decodeReport(b); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// Two parts of a peer report at once (its health announcer, its follow
// loop): each report goes out whole, and under -race nothing races.
func TestGossip_SetReport_from_two_goroutines(t *testing.T) {
	g := start(t, "a", nil)
	var wg sync.WaitGroup
	for k := range 2 {
		wg.Go(func() {
			for i := range 20 {
				if err := g.SetReport(Report{Addr: "127.0.0.1", CPU: 4, Raft: fmt.Sprintf("r%d-%d", k, i)}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if r := g.Report(); !strings.HasPrefix(r.Raft, "r") || r.CPU != 4 {
		t.Fatalf("the last report: %+v", r)
	}
}
