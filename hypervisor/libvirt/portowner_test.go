package libvirt

import (
	"os/exec"
	"strings"
	"testing"
)

func TestRulePort_cases(t *testing.T) {
	for rule, want := range map[string]int{"tcp:127.0.0.1:20345": 20345, "tcp:127.0.0.1:0": 0, "tcp:127.0.0.1:x": 0, "none": 0, "tcp:127.0.0.1:70000": 0} {
		got, ok := rulePort(rule)
		if ok != (want != 0) || ok && got != want {
			t.Errorf("rulePort(%q) = %d %v, want %d", rule, got, ok, want)
		}
	}
}

// The forward table's script is one nft accepts (checked, not applied),
// keeps every port but the peer's user's connections out, and removes a
// port as it adds it (so that removing one the set lacks is no error).
func TestForwardRules_nft_accepts_them(t *testing.T) {
	table := forwardTable("svc.peer-1.")
	if table != "svc_fwd_peer_1" {
		t.Fatalf("table %q", table)
	}
	for _, add := range []bool{true, false} {
		rules := forwardRules(table, 0, 20001, add)
		if !strings.Contains(rules, "tcp dport @ports meta skuid != 0 reject with tcp reset") {
			t.Fatalf("no rule for other users:\n%s", rules)
		}
		if got := strings.Contains(rules, "delete element inet svc_fwd_peer_1 ports { 20001 }"); got == add {
			t.Fatalf("add %v, script:\n%s", add, rules)
		}
		if _, err := exec.LookPath("nft"); err != nil {
			continue
		}
		cmd := exec.Command("nft", "-c", "-f", "-")
		cmd.Stdin = strings.NewReader(rules)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("nft -c: %v: %s\n%s", err, out, rules)
		}
	}
}
