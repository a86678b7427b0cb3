package raftfsm

import (
	"strings"
	"time"
)

// Image operations a VM's host carries out.
const (
	// OpCommit writes the VM's disk over its image's name: new deploys start
	// from it (VMs running on the old content keep it).
	OpCommit = "commit"
	// OpSave writes the VM's disk as a new image.
	OpSave = "save"
)

// ImageOp is a commit or save of a VM's disk under way. The VM's host stops
// the VM, writes its disk flattened onto its base as a new blob, and reports
// the blob (VMImageOpDone) or why it could not (VMImageOpFailed). A host that
// restarts in the middle starts the operation again: it stays recorded until
// one of the two reports.
type ImageOp struct {
	// ID is the index of the entry that asked for it; reports name it.
	ID      uint64    `json:"id"`
	Kind    string    `json:"kind"`
	Image   string    `json:"image"`
	Started time.Time `json:"started"`
}

// VMImageOp asks a VM's host to commit or save its disk. Image names the
// new image of a save; Description, when set, becomes the image's.
type VMImageOp struct {
	Namespace   string    `json:"namespace"`
	VM          string    `json:"vm"`
	Kind        string    `json:"kind"`
	Image       string    `json:"image,omitempty"`
	Description *string   `json:"description,omitempty"`
	Owner       string    `json:"owner,omitempty"`
	Time        time.Time `json:"time"`
}

// VMImageOpDone reports the blob a commit or save wrote: the image takes it
// and the VM restarts on top of it (a fresh overlay).
type VMImageOpDone struct {
	Namespace   string `json:"namespace"`
	VM          string `json:"vm"`
	ID          uint64 `json:"id"`
	Node        string `json:"node"`
	Digest      string `json:"digest"`
	SizeBytes   int64  `json:"sizeBytes"`
	VirtualSize int64  `json:"virtualSize"`
	Format      string `json:"format"`
	// OS, NVRAMDigest (of NVRAMSize bytes) and HardwareModel are a macOS
	// guest's, which the image keeps with its disk.
	OS            string `json:"os,omitempty"`
	NVRAMDigest   string `json:"nvramDigest,omitempty"`
	NVRAMSize     int64  `json:"nvramSize,omitempty"`
	HardwareModel string `json:"hardwareModel,omitempty"`
}

// VMImageOpFailed reports a commit or save that could not be carried out:
// the image keeps its content and shows the error.
type VMImageOpFailed struct {
	Namespace string `json:"namespace"`
	VM        string `json:"vm"`
	ID        uint64 `json:"id"`
	Node      string `json:"node"`
	Error     string `json:"error"`
}

func (s *State) applyVMImageOp(index uint64, c VMImageOp) (any, error) {
	vm, err := s.vm(c.Namespace, c.VM)
	if err != nil {
		return nil, err
	}
	if vm.PendingOp != nil {
		return nil, ruleErr(ErrConflict, "vm %q: a %s is already under way", c.VM, vm.PendingOp.Kind)
	}
	if c.Description != nil && len(*c.Description) > MaxDescription {
		return nil, ruleErr(ErrInvalid, "description is over %d bytes", MaxDescription)
	}
	var img *Image
	switch c.Kind {
	case OpCommit:
		img, _, _, err = s.artifact(KindImage, c.Namespace, vm.Image)
		if err != nil {
			return nil, err
		}
		if img.State == ImageUpdating {
			return nil, ruleErr(ErrConflict, "image %q is being updated by another commit or save", vm.Image)
		}
		img.State, img.ErrorMessage = ImageUpdating, ""
		if c.Description != nil {
			img.Description = *c.Description
		}
	case OpSave:
		img = &Image{
			Name: c.Image, Namespace: c.Namespace, Arch: vm.Arch, SourceType: "vm", Source: c.VM,
			Owner: c.Owner, CreatedAt: c.Time, State: ImageUpdating,
		}
		if c.Description != nil {
			img.Description = *c.Description
		}
		if err := s.addArtifact(s.Images, KindImage, img); err != nil {
			return nil, err
		}
	default:
		return nil, ruleErr(ErrInvalid, "unknown image operation %q: commit or save", c.Kind)
	}
	vm.PendingOp = &ImageOp{ID: index, Kind: c.Kind, Image: img.Name, Started: c.Time}
	out := *img
	return &out, nil
}

// pendingOp returns the VM and image of the operation a report names.
func (s *State) pendingOp(ns, name string, id uint64, node string) (*VM, *Image, error) {
	vm, err := s.vm(ns, name)
	if err != nil {
		return nil, nil, err
	}
	if vm.PendingOp == nil || vm.PendingOp.ID != id {
		return nil, nil, ruleErr(ErrNotFound, "vm %q has no image operation %d under way", name, id)
	}
	if vm.Node != node {
		return nil, nil, ruleErr(ErrConflict, "vm %q runs on %s, not %s", name, vm.Node, node)
	}
	img, _, _, err := s.artifact(KindImage, ns, vm.PendingOp.Image)
	if err != nil {
		return nil, nil, err
	}
	return vm, img, nil
}

func (s *State) applyVMImageOpDone(c VMImageOpDone) (any, error) {
	if !strings.HasPrefix(c.Digest, "sha256:") || len(c.Digest) != 71 || c.SizeBytes <= 0 {
		return nil, ruleErr(ErrInvalid, "a digest sha256:<64 hex digits> and a size are required")
	}
	guest := Image{OS: c.OS, NVRAMDigest: c.NVRAMDigest, HardwareModel: c.HardwareModel}
	if err := guest.validGuest(); err != nil {
		return nil, err
	}
	vm, img, err := s.pendingOp(c.Namespace, c.VM, c.ID, c.Node)
	if err != nil {
		return nil, err
	}
	x := s.ix()
	x.dropImage(img)
	img.Digest, img.SizeBytes, img.VirtualSize, img.Format = c.Digest, c.SizeBytes, c.VirtualSize, c.Format
	img.OS, img.NVRAMDigest, img.HardwareModel = c.OS, c.NVRAMDigest, c.HardwareModel
	img.State, img.ErrorMessage = ImageReady, ""
	x.addImage(img)
	s.holdBlob(c.Digest, c.SizeBytes, c.Node)
	if c.NVRAMDigest != "" {
		s.holdBlob(c.NVRAMDigest, c.NVRAMSize, c.Node)
	}
	// The VM goes on from the result: a fresh overlay on the new content.
	x.dropDigest(vm.ImageDigest)
	x.dropDigest(vm.NVRAMDigest)
	vm.Image, vm.ImageDigest, vm.ImageFormat = img.Name, c.Digest, c.Format
	vm.NVRAMDigest, vm.HardwareModel = c.NVRAMDigest, c.HardwareModel
	x.addDigest(vm.ImageDigest)
	x.addDigest(vm.NVRAMDigest)
	vm.RevertGen++
	vm.DiskBytes, vm.BaseDiskBytes = c.VirtualSize, c.VirtualSize
	vm.Desired, vm.PendingOp = VMRunning, nil
	if vm.Status == VMFailed {
		vm.Status, vm.ErrorMessage, vm.ErrorReason = VMPending, "", ""
	}
	out := *img
	return &out, nil
}

func (s *State) applyVMImageOpFailed(c VMImageOpFailed) (any, error) {
	vm, img, err := s.pendingOp(c.Namespace, c.VM, c.ID, c.Node)
	if err != nil {
		return nil, err
	}
	msg := c.Error
	if len(msg) > MaxDescription {
		msg = msg[:MaxDescription]
	}
	img.State, img.ErrorMessage = ImageFailed, vm.PendingOp.Kind+" of vm "+vm.Name+" failed: "+msg
	vm.PendingOp = nil
	out := *img
	return &out, nil
}
