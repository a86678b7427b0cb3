package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// Work inside a VM this host runs, for the API: run a program in its
// guest, reach a guest port, grow its disk. The API checks who may and
// that the VM runs; this checks that the VM is here and the hypervisor
// can, and says why not with an error the API maps to its Status.

// ErrNotHere is returned for a VM another host runs.
var ErrNotHere = errors.New("the VM is not on this host")

func (h *Host) domainOf(vm raftfsm.VM) (string, error) {
	if vm.Node != h.cfg.Name {
		return "", fmt.Errorf("vm %q is on %s: %w", vm.Name, vm.Node, ErrNotHere)
	}
	return hypervisor.DomainFor(h.cfg.Name, vm.Namespace, vm.Name, vm.Domain), nil
}

// Exec runs a program in the VM's guest through its agent
// (hypervisor.ErrNoAgent when it has none, ErrUnsupported when the
// hypervisor cannot talk to one).
func (h *Host) Exec(ctx context.Context, vm raftfsm.VM, c hypervisor.ExecCommand) (hypervisor.ExecResult, error) {
	name, err := h.domainOf(vm)
	if err != nil {
		return hypervisor.ExecResult{}, err
	}
	ag, ok := h.cfg.Driver.(hypervisor.GuestAgent)
	if !ok {
		return hypervisor.ExecResult{}, fmt.Errorf("run in vm %q: %w (no guest agent channel)", vm.Name, hypervisor.ErrUnsupported)
	}
	h.metrics.guestRuns.Inc()
	res, err := ag.Exec(ctx, name, c)
	if vm.Guest == nil && !errors.Is(err, hypervisor.ErrNoAgent) {
		h.agentHeard(vm) // its record still says no agent answers
	}
	return res, err
}

// GuestPort returns a host address that reaches the VM's guest TCP port
// until release is called.
func (h *Host) GuestPort(ctx context.Context, vm raftfsm.VM, port int) (string, func(), error) {
	name, err := h.domainOf(vm)
	if err != nil {
		return "", nil, err
	}
	gp, ok := h.cfg.Driver.(hypervisor.GuestPorts)
	if !ok {
		return "", nil, fmt.Errorf("forward a port of vm %q: %w", vm.Name, hypervisor.ErrUnsupported)
	}
	return gp.OpenGuestPort(ctx, name, port)
}

// ResizeDisk grows the VM's disk to bytes and records its new size; it
// returns the size the disk had.
func (h *Host) ResizeDisk(ctx context.Context, vm raftfsm.VM, bytes int64) (int64, error) {
	name, err := h.domainOf(vm)
	if err != nil {
		return 0, err
	}
	dr, ok := h.cfg.Driver.(hypervisor.DiskResizer)
	if !ok {
		return 0, fmt.Errorf("resize vm %q: %w", vm.Name, hypervisor.ErrUnsupported)
	}
	cur, err := dr.DiskSize(name)
	if err != nil {
		return 0, err
	}
	if bytes < cur {
		return cur, fmt.Errorf("vm %q has a disk of %d bytes, more than %d: %w", vm.Name, cur, bytes, hypervisor.ErrShrink)
	}
	if h.cfg.Disk != nil && bytes > cur {
		// held until the new size is recorded: the VMs' growth counts it then
		grow := (bytes - cur) + (bytes-cur)/64
		hold, err := h.cfg.Disk.Reserve(fmt.Sprintf("growing vm %q's disk by %s", vm.Name, api.FormatSize(bytes-cur)), grow, "")
		if err != nil {
			return cur, fmt.Errorf("%w: %w", hypervisor.ErrNoSpace, err)
		}
		defer hold.Release()
	}
	// The new size is recorded first: the namespace's disk quota is checked
	// there, one resize after another; a resize that then fails on the
	// host is undone in the record.
	rec := raftfsm.VMDiskSize{Namespace: vm.Namespace, Name: vm.Name, Node: h.cfg.Name, UID: vm.UID, DiskBytes: bytes}
	if _, err := h.cfg.Proposer.Apply(ctx, raftfsm.TypeVMDiskSize, rec); err != nil {
		return cur, fmt.Errorf("record the new size: %w", err)
	}
	if err := dr.ResizeDisk(ctx, name, bytes); err != nil {
		rec.DiskBytes, rec.Undo = max(vm.DiskBytes, vm.BaseDiskBytes), true
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second) // even when the caller has gone
		if _, uerr := h.cfg.Proposer.Apply(uctx, raftfsm.TypeVMDiskSize, rec); uerr != nil {
			h.cfg.Log.Warn("undo a resize's record", "vm", vm.Namespace+"/"+vm.Name, "err", uerr)
		}
		cancel()
		return cur, err
	}
	h.cfg.Log.Info("disk resized", "vm", vm.Namespace+"/"+vm.Name, "from", cur, "to", bytes)
	return cur, nil
}
