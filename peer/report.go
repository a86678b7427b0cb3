package peer

import (
	"context"
	"net"
	"time"

	"github.com/svc-project/svc/gossip"
	"github.com/svc-project/svc/raftfsm"
)

// IsPeer reports whether ip is the address of a node of the cluster.
func (p *Peer) IsPeer(ip string) bool {
	return ip == p.cfg.Bind || p.FSM().IsNodeAddr(ip)
}

// report is what this peer gossips about itself.
func (p *Peer) report() gossip.Report {
	shared, why := p.offersShared()
	room, known := p.diskRoom()
	return gossip.Report{
		SharedStorage: shared, SharedStorageWhy: why,
		Addr:        p.cfg.Bind,
		APIAddr:     p.apiL.Addr().String(),
		RaftAddr:    p.netHost().RaftAddr,
		TLSPort:     p.tlsL.Addr().(*net.TCPAddr).Port,
		Arch:        p.cfg.Arch,
		Hypervisor:  p.cfg.Hypervisor,
		Version:     p.cfg.Version,
		Level:       raftfsm.Level,
		CPU:         int(float64(p.cfg.Capacity.CPU) * p.cfg.CPUOvercommit),
		Overcommit:  p.cfg.CPUOvercommit,
		MemoryBytes: p.cfg.Capacity.MemoryBytes,
		GPU:         p.cfg.Capacity.GPU,
		HasState:    p.store != nil && p.store.HadState(),
		Problem:     p.problem(),
		KeyEpoch:    p.member.KeyEpoch(),
		DiskRoom:    room, DiskKnown: known,
		Raft: p.follows.gossiped(),
	}
}

// problem is why this node takes no VMs ("" when it does): it awaits an
// admin's approval, or its health monitor found something.
func (p *Peer) problem() string {
	if p.member != nil {
		if why := p.member.Pending(); why != "" {
			return why
		}
	}
	return p.health.Problem()
}

// diskRoomStep is the step the disk's room is reported in: the room
// changes as work is held and done, and a report that changes writes the
// node's record.
const diskRoomStep = 64 << 20

// diskRoom is the room of this peer's data dir disk, as reported: with
// what pooled hot guests give back to a VM placed here.
func (p *Peer) diskRoom() (int64, bool) {
	if p.disk == nil {
		return 0, false
	}
	r, err := p.disk.Room()
	if err != nil {
		return 0, false
	}
	return max(0, r.Room+r.Yieldable) / diskRoomStep * diskRoomStep, true
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

// watchDiskRoom has the report gossiped again whenever the disk's room, as
// reported, changes (looked at every health interval), so that placement
// sees a full disk within seconds.
func (p *Peer) watchDiskRoom(ctx context.Context) {
	t := time.NewTicker(p.cfg.HealthInterval)
	defer t.Stop()
	last, _ := p.diskRoom()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if room, _ := p.diskRoom(); room != last {
			last = room
			p.health.AnnounceSoon()
		}
	}
}
