package host

import (
	"fmt"
	"os"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
)

// A VM's disk is a copy-on-write file over its image that grows as its
// guest writes, up to the size the guest sees: this node promises each VM
// that much (diskbudget). A VM's disk being made is held for its whole
// bound; once made, the VMs' growth counts what each may still take.

// diskPather is a driver that keeps each domain's disk in one file here.
type diskPather interface {
	DiskPath(name string) string
}

// diskBound is how much a VM's disk file may take on this host
// (raftfsm.VM.DiskBound); a VM whose size is not recorded is given its
// base's own size (a raw base's is its guest's size; a qcow2's at most
// that).
func (h *Host) diskBound(vm raftfsm.VM) int64 {
	if b := vm.DiskBound(); b > 0 || vm.ImageDigest == "" {
		return b
	}
	fi, err := os.Stat(h.cfg.Images.Path(vm.ImageDigest))
	if err != nil {
		return 0
	}
	return fi.Size() + fi.Size()/64
}

// DiskGrowth is how much more the disks of this node's VMs may take: each
// one's bound less what its file holds now. A VM whose disk is not made
// yet is counted by the hold its making takes.
func (h *Host) DiskGrowth() int64 {
	dp, ok := h.cfg.Driver.(diskPather)
	if !ok {
		return 0
	}
	var n int64
	for _, vm := range h.cfg.FSM.VMsOnNode(h.cfg.Name) {
		path := dp.DiskPath(hypervisor.DomainFor(h.cfg.Name, vm.Namespace, vm.Name, vm.Domain))
		if _, err := os.Stat(path); err != nil {
			continue
		}
		n += max(0, h.diskBound(vm)-diskbudget.Allocated(path))
	}
	return n
}

// holdDisk holds room for a VM's disk about to be made, or says why there
// is none (an error wrapping diskbudget.ErrNoRoom); release the hold once
// the disk is made. Without a budget it holds nothing.
func (h *Host) holdDisk(vm raftfsm.VM) (*diskbudget.Hold, error) {
	if h.cfg.Disk == nil {
		return nil, nil
	}
	return h.cfg.Disk.Reserve(fmt.Sprintf("vm %q's disk", vm.Name), h.diskBound(vm), "")
}
