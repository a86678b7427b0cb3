package leader

import (
	"slices"
	"testing"
	"time"
)

func TestPlanReplicas(t *testing.T) {
	voter := func(name, domain string) candidate {
		return candidate{Name: name, Domain: domain, Alive: true, InConfig: true, Voter: true}
	}
	replica := func(name, domain string) candidate {
		return candidate{Name: name, Domain: domain, Alive: true, InConfig: true}
	}
	host := func(name, domain string) candidate { return candidate{Name: name, Domain: domain, Alive: true} }
	dead := func(c candidate, for_ time.Duration) candidate { c.Alive, c.DeadFor = false, for_; return c }
	pending := func(c candidate) candidate { c.Pending = true; return c }
	const after = 30 * time.Second
	tests := []struct {
		name        string
		cands       []candidate
		max         int
		add, remove []string
	}{
		{name: "fills the places by name", max: 2,
			cands: []candidate{voter("v1", ""), voter("v2", ""), voter("v3", ""), host("h3", ""), host("h1", ""), host("h2", "")},
			add:   []string{"h1", "h2"}},
		{name: "spreads over the domains the voters cover least", max: 2,
			cands: []candidate{voter("v1", "zone.a"), voter("v2", "zone.a"), voter("v3", "zone.b"), host("h1", "zone.a"), host("h2", "zone.b"), host("h3", "zone.c")},
			add:   []string{"h3", "h2"}},
		{name: "full: nothing to do", max: 1,
			cands: []candidate{voter("v1", ""), replica("r1", ""), host("h1", "")}},
		{name: "a replica dead past the bound is replaced", max: 1,
			cands:  []candidate{voter("v1", ""), dead(replica("r1", ""), time.Minute), host("h1", "")},
			add:    []string{"h1"},
			remove: []string{"r1"}},
		{name: "a replica dead a moment keeps its place", max: 1,
			cands: []candidate{voter("v1", ""), dead(replica("r1", ""), time.Second), host("h1", "")}},
		{name: "over the bound: the dead first, then the most covered domain's", max: 1,
			cands:  []candidate{voter("v1", "zone.a"), replica("r1", "zone.a"), replica("r2", "zone.b"), dead(replica("r3", "zone.b"), time.Second)},
			remove: []string{"r3", "r1"}},
		{name: "no bound left: every replica goes", max: 0,
			cands:  []candidate{voter("v1", ""), replica("r1", ""), host("h1", "")},
			remove: []string{"r1"}},
		{name: "pending peers and dead hosts are no candidates", max: 3,
			cands: []candidate{voter("v1", ""), pending(host("p1", "")), pending(replica("p2", "")), dead(host("d1", ""), time.Hour), host("h1", "")},
			add:   []string{"h1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			add, remove := planReplicas(tt.cands, tt.max, after)
			if !slices.Equal(add, tt.add) || !slices.Equal(remove, tt.remove) {
				t.Fatalf("add %v remove %v, want add %v remove %v", add, remove, tt.add, tt.remove)
			}
		})
	}
}

func TestDomainOf(t *testing.T) {
	for _, c := range []struct {
		tags []string
		want string
	}{
		{nil, ""},
		{[]string{"ssd", "zone.rack-3", "zone.other"}, "zone.rack-3"},
		{[]string{"zone"}, ""},
	} {
		if got := domainOf(c.tags); got != c.want {
			t.Errorf("%v: %q, want %q", c.tags, got, c.want)
		}
	}
}
