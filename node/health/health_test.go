package health

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/fake"
	"github.com/svc-project/svc/testkit/poll"
)

// guarded is the fake hypervisor with a guard that records what it was
// asked and fails when told to.
type guarded struct {
	*fake.Driver
	mu       sync.Mutex
	guards   [][]hypervisor.Target
	unguards int
	fail     error
}

func (g *guarded) GuardGuests(_ context.Context, targets []hypervisor.Target) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fail != nil {
		return g.fail
	}
	g.guards = append(g.guards, slices.Clone(targets))
	return nil
}

func (g *guarded) UnguardGuests(context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unguards++
	return nil
}

func (g *guarded) counts() (guards, unguards int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.guards), g.unguards
}

func target(port uint16) hypervisor.Target {
	return hypervisor.Target{Addr: netip.MustParseAddr("10.0.0.1"), Port: port, Proto: "tcp"}
}

// fixture is a Monitor on a driver, the targets it is given and the
// announcements it makes.
type fixture struct {
	m         *Monitor
	mu        sync.Mutex
	targets   []hypervisor.Target
	announced []string // the problem at each announcement
}

func newFixture(driver hypervisor.Driver) *fixture {
	f := &fixture{targets: []hypervisor.Target{target(7000)}}
	f.m = New(Config{
		Driver:  driver,
		Targets: func() []hypervisor.Target { f.mu.Lock(); defer f.mu.Unlock(); return slices.Clone(f.targets) },
		Announce: func() error {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.announced = append(f.announced, f.m.Problem())
			return nil
		},
		Interval: time.Hour, // the tests probe by hand
	})
	return f
}

func (f *fixture) announcements() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.announced)
}

func TestMonitor_check(t *testing.T) {
	down := fake.New("svc.h.")
	down.SetDown(true)
	for _, tc := range []struct {
		name    string
		driver  hypervisor.Driver
		problem string // a substring; "" for none
		ok      bool
	}{
		{"no driver", nil, NoDriver, false},
		{"the hypervisor answers", fake.New("svc.h."), "", true},
		{"the hypervisor is down", down, "hypervisor does not answer", false},
		{"the guard holds", &guarded{Driver: fake.New("svc.h.")}, "", true},
		{"the guard fails", &guarded{Driver: fake.New("svc.h."), fail: errors.New("nft: no such table")}, "cannot keep VMs from the cluster's ports: nft: no such table", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(tc.driver)
			f.m.Check(context.Background())
			got := f.m.Problem()
			if tc.problem == "" && got != "" || tc.problem != "" && !strings.Contains(got, tc.problem) {
				t.Fatalf("problem %q, want %q", got, tc.problem)
			}
			if f.m.OK() != tc.ok {
				t.Fatalf("OK %v, want %v", f.m.OK(), tc.ok)
			}
			if a := f.announcements(); len(a) != 0 {
				t.Fatalf("Check announced %q: the first report goes out with gossip's start", a)
			}
		})
	}
}

// A probe announces the report only when the problem changes, with the new
// problem in it.
func TestMonitor_announces_changes_only(t *testing.T) {
	d := fake.New("svc.h.")
	f := newFixture(d)
	ctx := context.Background()
	f.m.Check(ctx)
	f.m.set(f.m.probe(ctx))
	d.SetDown(true)
	f.m.set(f.m.probe(ctx))
	f.m.set(f.m.probe(ctx))
	d.SetDown(false)
	f.m.set(f.m.probe(ctx))
	got := f.announcements()
	if len(got) != 2 || !strings.HasPrefix(got[0], "hypervisor does not answer") || got[1] != "" {
		t.Fatalf("announced %q, want the problem once and its end once", got)
	}
}

// The guard is given the cluster's ports again only when they change.
func TestMonitor_guard_follows_targets(t *testing.T) {
	g := &guarded{Driver: fake.New("svc.h.")}
	f := newFixture(g)
	ctx := context.Background()
	f.m.Check(ctx)
	f.m.set(f.m.probe(ctx))
	if n, _ := g.counts(); n != 1 {
		t.Fatalf("%d guard calls for unchanged targets, want 1", n)
	}
	f.mu.Lock()
	f.targets = append(f.targets, target(7001))
	f.mu.Unlock()
	f.m.set(f.m.probe(ctx))
	g.mu.Lock()
	n, last := len(g.guards), g.guards[len(g.guards)-1]
	g.mu.Unlock()
	if n != 2 || !slices.Contains(last, target(7001)) {
		t.Fatalf("guards %v: a new port was not guarded", g.guards)
	}
}

// Run probes at once and announces a problem found; AnnounceSoon has the
// announcer gossip again; both end with their context.
func TestMonitor_run(t *testing.T) {
	d := fake.New("svc.h.")
	d.SetDown(true)
	f := newFixture(d)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { f.m.Run(ctx) })
	wg.Go(func() { f.m.RunAnnouncer(ctx) })
	poll.For(t, "the problem announced", 10*time.Second, poll.True(func() bool { return len(f.announcements()) == 1 }))
	f.m.AnnounceSoon()
	poll.For(t, "the report announced again", 10*time.Second, poll.True(func() bool { return len(f.announcements()) == 2 }))
	cancel()
	wg.Wait()
}

// The guard is lifted on a clean stop only when no VM is left.
func TestMonitor_unguard(t *testing.T) {
	g := &guarded{Driver: fake.New("svc.h.")}
	f := newFixture(g)
	if err := g.Create(context.Background(), hypervisor.Spec{Name: "svc.h.vm", CPU: 1, MemoryMiB: 64}); err != nil {
		t.Fatal(err)
	}
	f.m.Unguard()
	if _, n := g.counts(); n != 0 {
		t.Fatal("the guard was lifted while a VM runs")
	}
	if err := g.Delete(context.Background(), "svc.h.vm"); err != nil {
		t.Fatal(err)
	}
	f.m.Unguard()
	if _, n := g.counts(); n != 1 {
		t.Fatal("the guard stayed with no VM left")
	}
	newFixture(fake.New("svc.h.")).m.Unguard() // no guard: nothing to do
}
