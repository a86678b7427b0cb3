package libvirt

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// A port forward (OpenGuestPort) is a listening socket of QEMU's on the
// host's loopback, which any local user could connect to while it is open.
// Each peer keeps its forwards' ports in an nftables set, and a rule on the
// host's output path resets every new connection to one of them whose
// socket belongs to another user than the peer's: the peer (and root's
// tools, when the peer is root) alone reaches the guest through them.

// forwardTable is the nftables table of the forwards of the domains named
// with prefix (one per peer, as the guard's).
func forwardTable(prefix string) string {
	return "svc_fwd_" + strings.TrimPrefix(guardTable(prefix), "svc_guard_")
}

// forwardRules is the nftables script that makes the table (idempotent:
// its set keeps the ports it holds), its one rule for the peer's uid, and
// adds (or removes) port in the set.
func forwardRules(table string, uid, port int, add bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "add table inet %s\n", table)
	fmt.Fprintf(&b, "add set inet %s ports { type inet_service; }\n", table)
	fmt.Fprintf(&b, "add chain inet %s out { type filter hook output priority 0; policy accept; }\n", table)
	fmt.Fprintf(&b, "flush chain inet %s out\n", table)
	fmt.Fprintf(&b, "add rule inet %s out ct state new ip daddr 127.0.0.1 tcp dport @ports meta skuid != %d reject with tcp reset\n", table, uid)
	// Added first, so that deleting a port the set lacks is no error.
	fmt.Fprintf(&b, "add element inet %s ports { %d }\n", table, port)
	if !add {
		fmt.Fprintf(&b, "delete element inet %s ports { %d }\n", table, port)
	}
	return b.String()
}

// ownForwardPort keeps loopback port to the peer's user (add), or lets it
// go (!add), with nft.
func (p *guestPorts) ownForwardPort(ctx context.Context, port int, add bool) error {
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(forwardRules(forwardTable(p.cfg.Prefix), os.Getuid(), port, add))
	if out, err := cmd.CombinedOutput(); err != nil {
		what := "keep port " + strconv.Itoa(port) + " to this peer's user"
		if !add {
			what = "let port " + strconv.Itoa(port) + " go"
		}
		return fmt.Errorf("%s: nft: %w: %s", what, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// rulePort returns the host port of a forward rule ("tcp:127.0.0.1:PORT").
func rulePort(rule string) (int, bool) {
	i := strings.LastIndexByte(rule, ':')
	if i < 0 {
		return 0, false
	}
	p, err := strconv.Atoi(rule[i+1:])
	return p, err == nil && p > 0 && p < 65536
}
