package leader

import (
	"testing"

	"github.com/svc-project/svc/gossip"
)

// A node that offers no shared storage always has a reason in its record,
// even when its report lost it to gossip's size limit.
func TestFacts_shared_storage_reason(t *testing.T) {
	for _, c := range []struct {
		name    string
		report  gossip.Report
		offered bool
		why     string
	}{
		{name: "offered", report: gossip.Report{SharedStorage: true}, offered: true, why: ""},
		{name: "not offered, with its reason", report: gossip.Report{SharedStorageWhy: "no 9p"}, why: "no 9p"},
		{name: "not offered, reason lost", report: gossip.Report{}, why: "the peer did not say why"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := facts(gossip.Member{Name: "n1", Report: c.report})
			if f.SharedStorage != c.offered || f.SharedStorageWhy != c.why {
				t.Fatalf("facts: offered %v, why %q; want %v, %q", f.SharedStorage, f.SharedStorageWhy, c.offered, c.why)
			}
		})
	}
}
