package libvirt

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/svc-project/svc/hypervisor"
)

func TestGuardRules(t *testing.T) {
	rules, err := guardRules(guardTable(hypervisor.DomainPrefix("peer-1")), 995, []hypervisor.Target{
		{Addr: netip.MustParseAddr("10.0.0.5"), Port: 7000, Proto: "tcp"},
		{Addr: netip.MustParseAddr("::ffff:10.0.0.5"), Port: 7000, Proto: "tcp"}, // the same, mapped
		{Addr: netip.MustParseAddr("fd00::5"), Port: 7946, Proto: "udp"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"table inet svc_guard_peer_1 {",
		"meta skuid 995 ct state new ip daddr 127.0.0.0/8 th dport != 53 drop",
		"meta skuid 995 ct state new ip daddr 169.254.0.0/16 drop",
		"meta skuid 995 ct state new ip daddr 10.0.0.5 tcp dport 7000 drop",
		"meta skuid 995 ct state new ip6 daddr fd00::5 udp dport 7946 drop",
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("missing %q in\n%s", want, rules)
		}
	}
	if strings.Count(rules, "10.0.0.5") != 1 {
		t.Errorf("a target twice:\n%s", rules)
	}
	if _, err := guardRules("t", 1, []hypervisor.Target{{Addr: netip.MustParseAddr("10.0.0.1"), Port: 1, Proto: "sctp"}}); err == nil {
		t.Error("an unknown protocol was taken")
	}
}
