package node

import "slices"

// standingAddrs are the gossip addresses of the peers this one may ask
// whether it still belongs to the cluster: those it joined through, those
// it remembers, and those gossip knows.
func (p *Peer) standingAddrs() []string {
	addrs := slices.Clone(p.cfg.Join)
	for _, a := range p.loadPeers() {
		if !slices.Contains(addrs, a) {
			addrs = append(addrs, a)
		}
	}
	if p.gossip != nil {
		for _, m := range p.gossip.Members() {
			if m.Name != p.cfg.Name && !slices.Contains(addrs, m.GossipAddr) {
				addrs = append(addrs, m.GossipAddr)
			}
		}
	}
	return addrs
}
