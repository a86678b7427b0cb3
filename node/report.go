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
		RaftAddr:    p.raftAddr(),
		TLSPort:     p.tlsL.Addr().(*net.TCPAddr).Port,
		Arch:        p.cfg.Arch,
		Hypervisor:  p.cfg.Hypervisor,
		Version:     p.cfg.Version,
		CPU:         int(float64(p.cfg.Capacity.CPU) * p.cfg.CPUOvercommit),
		Overcommit:  p.cfg.CPUOvercommit,
		MemoryBytes: p.cfg.Capacity.MemoryBytes,
		GPU:         p.cfg.Capacity.GPU,
		HasState:    p.store != nil && p.store.HadState(),
		Problem:     p.currentProblem(),
		KeyEpoch:    p.keyEpoch(),
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

func (p *Peer) keyEpoch() uint64 {
	if p.member == nil {
		return 0
	}
	return p.member.KeyEpoch()
}

// announceSoon has this peer's report gossiped again (its keyring
// changed), without waiting for it: spreading a report can take seconds.
func (p *Peer) announceSoon() {
	select {
	case p.announceCh <- struct{}{}:
	default: // one is due already
	}
}

// announceLoop gossips this peer's report whenever announceSoon asks.
func (p *Peer) announceLoop() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.announceCh:
		}
		if err := p.gossip.SetReport(p.report()); err != nil {
			p.cfg.Log.Warn("gossip report", "err", err)
		}
	}
}

func (p *Peer) currentProblem() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.problem
}
