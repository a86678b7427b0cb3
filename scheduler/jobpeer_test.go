package scheduler

import (
	"slices"
	"testing"
)

func TestJobPeer(t *testing.T) {
	ready := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	for _, tc := range []struct {
		name       string
		prefer     string
		candidates []string
		ready      func(string) bool
		want       string
	}{
		{"the preferred peer when READY", "p1", []string{"p2", "p3"}, ready("p1", "p2"), "p1"},
		{"the first READY candidate when it is not", "p1", []string{"p2", "p3"}, ready("p3"), "p3"},
		{"the first READY candidate with no preference", "", []string{"p2", "p3"}, ready("p2", "p3"), "p2"},
		{"none READY", "p1", []string{"p2"}, ready(), ""},
		{"no candidates", "", nil, ready("p1"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := JobPeer(tc.prefer, tc.candidates, tc.ready)
			if got != tc.want || ok != (tc.want != "") {
				t.Fatalf("JobPeer = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
