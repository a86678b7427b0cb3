package host

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/imagestore/rawdisk"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
)

// A commit or save is carried out by the worker of the VM on its host, off
// the API path: stop the VM (ACPI, then forced), write its disk flattened onto
// its base as a new blob, and report it through the leader; the VM then
// restarts on the result. Nothing is overwritten in place: a crash in the
// middle leaves the image's content as it was, and the operation, still
// recorded, starts again when the host is back.

// imageOpTimeout bounds one attempt of a commit or save (a large disk is
// rewritten whole).
const imageOpTimeout = time.Hour

// imageOpAttempts is how many attempts a commit or save gets before it is
// reported failed.
const imageOpAttempts = 3

// runImageOp carries out the VM's pending operation once; after the last
// failed attempt it reports the failure (the image keeps its content).
func (w *vmWorker) runImageOp(ctx context.Context, vm raftfsm.VM, o observation) {
	p, op := w.h, vm.PendingOp
	log := p.cfg.Log.With("vm", w.ns+"/"+w.name, "op", op.Kind, "image", op.Image)
	if w.opID != op.ID {
		w.opID, w.opTries = op.ID, 0
	}
	w.opTries++
	ctx, cancel := context.WithTimeout(ctx, imageOpTimeout)
	defer cancel()
	start := time.Now()
	err := w.imageOp(ctx, vm, o)
	if err == nil {
		log.Info("image operation done", "took", time.Since(start))
		p.metrics.vmRuns.WithLabelValues("ok").Inc()
		return
	}
	if ctx.Err() != nil && p.ctx.Err() != nil {
		return // the peer stops: the operation starts again when it is back
	}
	if w.opTries < imageOpAttempts && !errors.Is(err, diskbudget.ErrNoRoom) {
		log.Warn("image operation failed; trying again", "attempt", w.opTries, "err", err)
		p.metrics.vmRuns.WithLabelValues("retry").Inc()
		return
	}
	log.Error("image operation failed", "attempts", w.opTries, "err", err)
	p.metrics.vmRuns.WithLabelValues("failed").Inc()
	rctx, rcancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer rcancel()
	if _, rerr := p.cfg.Proposer.Apply(rctx, raftfsm.TypeVMImageOpFailed, raftfsm.VMImageOpFailed{
		Namespace: vm.Namespace, VM: vm.Name, ID: op.ID, Node: p.cfg.Name, Error: err.Error(),
	}); rerr != nil {
		log.Warn("report the failed image operation", "err", rerr)
	}
}

func (w *vmWorker) imageOp(ctx context.Context, vm raftfsm.VM, o observation) error {
	p := w.h
	if !o.exists {
		return fmt.Errorf("the VM's domain is missing on %s", p.cfg.Name)
	}
	if o.state != hypervisor.StateShutoff {
		w.settled = time.Now()
		if err := p.cfg.Driver.Stop(ctx, w.domain, StopGrace); err != nil {
			return fmt.Errorf("stop the VM: %w", err)
		}
	}
	dst, err := p.cfg.Images.TempPath("export")
	if err != nil {
		return err
	}
	if p.cfg.Disk != nil {
		// the flattened disk takes at most what the guest sees
		hold, err := p.cfg.Disk.Reserve(fmt.Sprintf("the %s of vm %q", vm.PendingOp.Kind, vm.Name), p.diskBound(vm), dst)
		if err != nil {
			return err
		}
		defer hold.Release()
	}
	if err := p.export(ctx, w.domain, dst); err != nil {
		return fmt.Errorf("write the disk: %w", err)
	}
	// What the hypervisor wrote is checked like any disk that enters the
	// cluster before it is recorded; the check reads the file's metadata
	// while staging hashes and flushes it (neither writes it).
	type checked struct {
		info diskcheck.Info
		err  error
	}
	check := make(chan checked, 1)
	go func() {
		info, err := diskcheck.Disk(ctx, dst, "")
		check <- checked{info, err}
	}()
	staged, err := p.cfg.Images.StageFile(ctx, dst)
	c := <-check
	if err != nil {
		return err
	}
	defer staged.Discard()
	if c.err != nil {
		return fmt.Errorf("the written disk: %w", c.err)
	}
	info := c.info
	done := raftfsm.VMImageOpDone{
		Namespace: vm.Namespace, VM: vm.Name, ID: vm.PendingOp.ID, Node: p.cfg.Name,
		Digest: staged.Digest, SizeBytes: staged.Size, VirtualSize: info.VirtualSize, Format: info.Format,
	}
	nvram, err := p.keepIdentity(ctx, vm, w.domain, &done)
	if err != nil {
		return err
	}
	if nvram != nil {
		defer nvram.Release()
	}
	err = staged.Ingest(ctx, p.cfg.FSM.BlobInUse, func(ctx context.Context) error {
		_, err := p.cfg.Proposer.Apply(ctx, raftfsm.TypeVMImageOpDone, done)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the new content: %w", err)
	}
	return nil
}

// keepIdentity adds a macOS guest's NVRAM and Mac platform to what a
// commit or save records: the NVRAM committed to the blob store (leased
// until the record is in), the hardware model as the guest has it.
func (h *Host) keepIdentity(ctx context.Context, vm raftfsm.VM, domain string, done *raftfsm.VMImageOpDone) (*imagestore.Lease, error) {
	gi, ok := h.cfg.Driver.(hypervisor.GuestIdentity)
	if !ok || vm.OS != raftfsm.OSMacOS {
		return nil, nil
	}
	path, hw, err := gi.Identity(domain)
	if err != nil || path == "" {
		return nil, fmt.Errorf("the guest's NVRAM: %w", err)
	}
	tmp, err := h.cfg.Images.TempPath("nvram")
	if err != nil {
		return nil, err
	}
	if err := rawdisk.CopySparse(ctx, path, tmp); err != nil {
		return nil, fmt.Errorf("the guest's NVRAM: %w", err)
	}
	st, err := h.cfg.Images.StageFile(ctx, tmp)
	if err != nil {
		return nil, err
	}
	lease, err := st.Commit()
	if err != nil {
		return nil, err
	}
	done.OS, done.NVRAMDigest, done.NVRAMSize = vm.OS, lease.Digest(), st.Size
	done.HardwareModel = base64.StdEncoding.EncodeToString(hw)
	return lease, nil
}
