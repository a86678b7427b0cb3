package node

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// guestTargets are the ports of the cluster that VMs must not reach: every
// peer's Raft port (TCP) and gossip port (TCP and UDP). Neither
// authenticates its callers (see hypervisor.GuestGuard).
func (p *Peer) guestTargets() []hypervisor.Target {
	var out []hypervisor.Target
	add := func(addr string, protos ...string) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			host, port, serr := net.SplitHostPort(addr)
			n, perr := strconv.ParseUint(port, 10, 16)
			ip, aerr := netip.ParseAddr(host)
			if serr != nil || perr != nil || aerr != nil {
				return
			}
			ap = netip.AddrPortFrom(ip, uint16(n))
		}
		for _, proto := range protos {
			out = append(out, hypervisor.Target{Addr: ap.Addr(), Port: ap.Port(), Proto: proto})
		}
	}
	for _, n := range p.FSM().Nodes() {
		add(n.RaftAddr, "tcp")
		add(n.GossipAddr, "tcp", "udp")
	}
	add(p.store.Addr(), "tcp") // this peer's own, before its node is recorded
	if p.gossip != nil {
		add(p.gossip.Addr(), "tcp", "udp")
	}
	slices.SortFunc(out, func(a, b hypervisor.Target) int {
		return strings.Compare(a.Proto+" "+netip.AddrPortFrom(a.Addr, a.Port).String(), b.Proto+" "+netip.AddrPortFrom(b.Addr, b.Port).String())
	})
	return slices.Compact(out)
}

// guardGuests keeps the guard of this peer's VMs in step with the cluster's
// ports, where the driver has one; it returns a problem ("" for none): a
// node whose VMs could reach the cluster's ports takes none.
func (p *Peer) guardGuests(ctx context.Context) string {
	g, ok := p.driver.(hypervisor.GuestGuard)
	if !ok {
		return ""
	}
	targets := p.guestTargets()
	p.mu.Lock()
	same := p.guarded != nil && slices.Equal(p.guarded, targets)
	p.mu.Unlock()
	if same {
		return ""
	}
	if err := g.GuardGuests(ctx, targets); err != nil {
		return "cannot keep VMs from the cluster's ports: " + err.Error()
	}
	p.mu.Lock()
	p.guarded = targets
	p.mu.Unlock()
	return ""
}

// unguard removes the guard of this peer's VMs on a clean stop when none of
// them is left: while one runs (VMs outlive their peer's restart) it must
// stay kept from the host's ports.
func (p *Peer) unguard() {
	g, ok := p.driver.(hypervisor.GuestGuard)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	doms, err := p.driver.List(ctx)
	switch {
	case err != nil:
		p.cfg.Log.Warn("the guard of the VMs stays: cannot list them", "err", err)
	case len(doms) > 0:
		p.cfg.Log.Info("the guard of the VMs stays: they run on", "vms", len(doms))
	default:
		if err := g.UnguardGuests(ctx); err != nil {
			p.cfg.Log.Warn("remove the guard of the VMs", "err", err)
		}
	}
}
