package node

import (
	"net"

	"github.com/svc-project/svc/gossip"
)

// IsPeer reports whether ip is the address of a node of the cluster.
func (p *Peer) IsPeer(ip string) bool {
	return ip == p.cfg.Bind || p.FSM().IsNodeAddr(ip)
}

// report is what this peer gossips about itself.
func (p *Peer) report() gossip.Report {
	shared, why := p.offersShared()
	return gossip.Report{
		SharedStorage: shared, SharedStorageWhy: why,
		Addr:        p.cfg.Bind,
		APIAddr:     p.apiL.Addr().String(),
		RaftAddr:    p.netHost().RaftAddr,
		TLSPort:     p.tlsL.Addr().(*net.TCPAddr).Port,
		Arch:        p.cfg.Arch,
		Hypervisor:  p.cfg.Hypervisor,
		Version:     p.cfg.Version,
		CPU:         int(float64(p.cfg.Capacity.CPU) * p.cfg.CPUOvercommit),
		Overcommit:  p.cfg.CPUOvercommit,
		MemoryBytes: p.cfg.Capacity.MemoryBytes,
		GPU:         p.cfg.Capacity.GPU,
		HasState:    p.store != nil && p.store.HadState(),
		Problem:     p.health.Problem(),
		KeyEpoch:    p.member.KeyEpoch(),
	}
}

// offersShared says whether this node offers shared storage now: a store,
// with room on its disk.
func (p *Peer) offersShared() (bool, string) {
	if p.shared == nil {
		return false, p.sharedWhy
	}
	if err := p.shared.Room(); err != nil {
		return false, err.Error()
	}
	return true, ""
}
