package libvirt

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"text/template"

	"github.com/svc-project/svc/hypervisor"
)

// A VM's network is QEMU's user-mode stack: what the guest connects to,
// QEMU connects to from the host, as QEMU's user. Left alone, a guest
// reaches the host's loopback services (10.0.2.2 is the host's 127.0.0.1),
// link-local addresses (cloud metadata) and the peers' Raft and gossip
// ports, which do not authenticate their callers: a tenant's guest could
// join the cluster. The guard drops such new connections of QEMU's user
// with nftables, on the host's output path. Guests keep every other
// address (the internet, the networks the host reaches, the API of every
// peer, other VMs' forwarded ports), and DNS through the host's resolver.

var _ hypervisor.GuestGuard = (*Driver)(nil)

// hostGuard is the driver's GuestGuard role: the nftables table that keeps
// the guests of this peer (QEMU's user) from the ports given.
type hostGuard struct {
	cfg  *Config
	user qemuUser
}

// guardTable is the nftables table of the guard of the domains named with
// prefix (one per peer: several peers may share a host).
func guardTable(prefix string) string {
	return "svc_guard_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.TrimSuffix(strings.TrimPrefix(prefix, "svc."), "."))
}

var guardTmpl = template.Must(template.New("guard").Parse(`table inet {{.Table}}
delete table inet {{.Table}}
table inet {{.Table}} {
	chain out {
		type filter hook output priority 0; policy accept;
		meta skuid {{.UID}} ct state new ip daddr 127.0.0.0/8 th dport != 53 drop
		meta skuid {{.UID}} ct state new ip6 daddr ::1 th dport != 53 drop
		meta skuid {{.UID}} ct state new ip daddr 169.254.0.0/16 drop
		meta skuid {{.UID}} ct state new ip6 daddr fe80::/10 drop
{{- range .Targets}}
		meta skuid {{$.UID}} ct state new {{if .Addr.Is4}}ip{{else}}ip6{{end}} daddr {{.Addr}} {{.Proto}} dport {{.Port}} drop
{{- end}}
	}
}
`))

// guardRules is the nftables script that (re)makes a guard.
func guardRules(table string, uid int, targets []hypervisor.Target) (string, error) {
	ts := slices.Clone(targets)
	for i, t := range ts {
		if t.Proto != "tcp" && t.Proto != "udp" {
			return "", fmt.Errorf("guard target %v: protocol %q", t, t.Proto)
		}
		ts[i].Addr = t.Addr.Unmap()
	}
	slices.SortFunc(ts, func(a, b hypervisor.Target) int {
		if c := a.Addr.Compare(b.Addr); c != 0 {
			return c
		}
		if a.Port != b.Port {
			return int(a.Port) - int(b.Port)
		}
		return strings.Compare(a.Proto, b.Proto)
	})
	ts = slices.Compact(ts)
	var b bytes.Buffer
	err := guardTmpl.Execute(&b, struct {
		Table   string
		UID     int
		Targets []hypervisor.Target
	}{table, uid, ts})
	return b.String(), err
}

// GuardGuests applies the guard with nft (atomically: the script replaces
// the table whole).
func (g hostGuard) GuardGuests(ctx context.Context, targets []hypervisor.Target) error {
	rules, err := guardRules(guardTable(g.cfg.Prefix), g.user.uid, targets)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// UnguardGuests removes the guard's table with nft.
func (g hostGuard) UnguardGuests(ctx context.Context) error {
	table := guardTable(g.cfg.Prefix)
	cmd := exec.CommandContext(ctx, "nft", "-f", "-")
	// Declaring it first makes the deletion of a table that is not there no error.
	cmd.Stdin = strings.NewReader("table inet " + table + "\ndelete table inet " + table + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
