package peer

import (
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

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
