package jobs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/imagestore/ocidisk"
	"github.com/svc-project/svc/raftfsm"
)

// PushStopTimeout bounds the wait for a VM to stop before its disk is read.
const PushStopTimeout = 3 * time.Minute

// push sends a VM's disk or an image to the job's reference.
func (m *Manager) push(ctx context.Context, j raftfsm.Job, rep *jobReporter) (string, error) {
	reg, err := m.registryFor(ctx, j.Namespace, j.Reference, true)
	if err != nil {
		return "", err
	}
	ref, err := ocidisk.ParseReference(j.Reference, reg.Insecure, true)
	if err != nil {
		return "", err
	}
	var path string
	cfg := ocidisk.Config{Kind: ocidisk.KindImage}
	if j.VM != "" {
		path, cfg, err = m.vmDisk(ctx, j, rep)
	} else {
		path, cfg, err = m.imageDisk(ctx, j)
	}
	if path != "" && path != m.cfg.Images.Path(cfg.Digest) {
		defer os.Remove(path)
	}
	if err != nil {
		return "", err
	}
	cfg.ChunkSize = int64(m.cfg.ChunkMiB) << 20
	res, err := ocidisk.Push(ctx, ref, reg, path, cfg, rep.progress(ctx))
	if err != nil {
		return "", err
	}
	if path == m.cfg.Images.Path(res.Config.Digest) {
		// A later pull of a disk that shares chunks with this one reads them here.
		if err := m.cfg.Images.SaveChunks(res.Config.Digest, indexOf(res.Chunks)); err != nil {
			m.cfg.Log.Warn("save the chunk index", "digest", res.Config.Digest, "err", err)
		}
	}
	return fmt.Sprintf("pushed %s@%s: %d chunks, %d sent (%d bytes), the rest already there",
		ref.Context().Name(), res.ManifestDigest, len(res.Chunks), res.ChunksSent, res.BytesSent), nil
}

// imageDisk returns the raw disk of the job's image: its blob when it is
// raw (its digest known), else a raw copy.
func (m *Manager) imageDisk(ctx context.Context, j raftfsm.Job) (string, ocidisk.Config, error) {
	img, ok := m.cfg.FSM.Image(j.Namespace, j.Image)
	if !ok || !img.Usable() {
		return "", ocidisk.Config{}, fmt.Errorf("image %q is gone or has no content", j.Image)
	}
	cfg := ocidisk.Config{Kind: ocidisk.KindImage, Arch: img.Arch, Description: img.Description}
	if img.Format == "raw" {
		cfg.Digest = img.Digest
		return m.cfg.Images.Path(img.Digest), cfg, nil
	}
	lease, err := m.cfg.Images.Lease(img.Digest)
	if err != nil {
		return "", cfg, fmt.Errorf("image %q is not on this peer: %w", j.Image, err)
	}
	defer lease.Release()
	dst, err := m.cfg.Images.TempPath("push")
	if err != nil {
		return "", cfg, err
	}
	return dst, cfg, imagestore.ToRaw(ctx, m.cfg.Images.Path(img.Digest), dst)
}

// vmDisk returns a consistent raw copy of a VM's disk: a running VM is
// stopped (through the replicated state, as a user's stop) while its disk is
// read, and started again. The job records that it stopped the VM first, so
// that a run after a crash starts again a VM it stopped, never one its user
// stopped.
func (m *Manager) vmDisk(ctx context.Context, j raftfsm.Job, rep *jobReporter) (string, ocidisk.Config, error) {
	if m.cfg.Disks == nil {
		return "", ocidisk.Config{}, fmt.Errorf("read the VM's disk: %w", hypervisor.ErrUnsupported)
	}
	vm, ok := m.cfg.FSM.VM(j.Namespace, j.VM)
	if !ok || vm.Node != m.cfg.Name {
		return "", ocidisk.Config{}, fmt.Errorf("vm %q is gone or runs elsewhere", j.VM)
	}
	cfg := ocidisk.Config{Kind: ocidisk.KindImage, Arch: vm.Arch, CPU: vm.CPU, MemoryBytes: vm.MemoryBytes}
	if vm.Desired == raftfsm.VMRunning || j.StoppedVM {
		if err := rep.markStoppedVM(ctx); err != nil {
			return "", cfg, err
		}
		if err := m.setDesired(ctx, vm, "stop", raftfsm.VMStopped); err != nil && !errors.Is(err, raftfsm.ErrConflict) {
			return "", cfg, err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(m.ctx, 30*time.Second)
			defer cancel()
			if _, err := m.cfg.Proposer.Apply(sctx, raftfsm.TypeVMAction, raftfsm.VMAction{Namespace: vm.Namespace, Name: vm.Name, Action: "start"}); err != nil {
				m.cfg.Log.Warn("start the VM again after reading its disk", "vm", vm.Name, "err", err)
			}
		}()
	}
	exported, err := m.cfg.Images.TempPath("push-export")
	if err != nil {
		return "", cfg, err
	}
	defer os.Remove(exported)
	if err := m.cfg.Disks.Export(ctx, hypervisor.DomainFor(m.cfg.Name, vm.Namespace, vm.Name, vm.Domain), exported); err != nil {
		return "", cfg, fmt.Errorf("read the VM's disk: %w", err)
	}
	dst, err := m.cfg.Images.TempPath("push")
	if err != nil {
		return "", cfg, err
	}
	info, err := diskcheck.Disk(ctx, exported, "")
	if err != nil {
		return dst, cfg, fmt.Errorf("the VM's disk: %w", err)
	}
	if info.Format == "raw" {
		return dst, cfg, os.Rename(exported, dst)
	}
	return dst, cfg, imagestore.ToRaw(ctx, exported, dst)
}

// setDesired asks for a VM action and waits until its node reports status.
func (m *Manager) setDesired(ctx context.Context, vm raftfsm.VM, action, status string) error {
	if _, err := m.cfg.Proposer.Apply(ctx, raftfsm.TypeVMAction, raftfsm.VMAction{Namespace: vm.Namespace, Name: vm.Name, Action: action}); err != nil {
		return fmt.Errorf("%s the VM: %w", action, err)
	}
	wctx, cancel := context.WithTimeout(ctx, PushStopTimeout)
	defer cancel()
	return m.cfg.FSM.WaitOn(wctx, raftfsm.VMTopic(vm.Namespace, vm.Name), func() bool {
		cur, ok := m.cfg.FSM.VM(vm.Namespace, vm.Name)
		return !ok || cur.Status == status
	})
}
