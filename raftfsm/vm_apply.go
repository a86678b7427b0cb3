package raftfsm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svc-project/svc/api"
)

// ErrNoRoom is wrapped when a node no longer has room or ports for a VM (the
// leader then places again); it wraps ErrConflict.
var ErrNoRoom = fmt.Errorf("%w: no room", ErrConflict)

// VM actions.
const (
	ActionStart   = "start"
	ActionStop    = "stop"
	ActionSuspend = "suspend"
	ActionResume  = "resume"
	ActionRevert  = "revert"
)

// VMCreate places a VM: the leader has chosen the node and its ports.
type VMCreate struct {
	VM VM `json:"vm"`
}

// VMAction changes what the user wants of a VM.
type VMAction struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Action    string `json:"action"`
}

// VMStatus is a node's report of a VM it runs.
type VMStatus struct {
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	Node              string `json:"node"`
	Status            string `json:"status"`
	ErrorMessage      string `json:"errorMessage,omitempty"`
	ErrorReason       string `json:"errorReason,omitempty"` // see VM.ErrorReason
	ObservedRevertGen int64  `json:"observedRevertGen"`
}

// VMDelete removes a VM; its node removes the domain and disk. With a UID,
// only that incarnation of the name is removed (a failed deploy cleans up
// its own VM, never one created under the same name meanwhile).
type VMDelete struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       uint64 `json:"uid,omitempty"`
}

// VMConfigCreate creates a VM config.
type VMConfigCreate struct {
	Config VMConfig `json:"config"`
}

// VMConfigDelete deletes a VM config.
type VMConfigDelete struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// BlobAddHolder records that a node now holds a blob.
//
// A blob no record lists yet is recorded when a VM or image references it
// (a VM deployed from a registry reference, whose image name went to other
// content while it was pulled), with SizeBytes.
type BlobAddHolder struct {
	Digest    string `json:"digest"`
	Node      string `json:"node"`
	SizeBytes int64  `json:"sizeBytes,omitempty"`
}

// BlobDropHolder records that a node no longer holds a blob (its garbage
// collection removed it); a blob no node holds is forgotten.
type BlobDropHolder struct {
	Digest string `json:"digest"`
	Node   string `json:"node"`
}

func (s *State) applyVMCreate(index uint64, c VMCreate) (any, error) {
	vm := c.VM.clone()
	if err := api.ValidateName("VM name", vm.Name, api.MaxNameLen); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if _, ok := s.Namespaces[vm.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", vm.Namespace)
	}
	k := key(vm.Namespace, vm.Name)
	if _, ok := s.VMs[k]; ok {
		return nil, ruleErr(ErrAlreadyExists, "vm %q already exists in namespace %q", vm.Name, vm.Namespace)
	}
	if vm.CPU < 1 || vm.MemoryBytes < 1 || vm.GPU < 0 {
		return nil, ruleErr(ErrInvalid, "vm %q: cpu and memory must be positive", vm.Name)
	}
	n, ok := s.Nodes[vm.Node]
	if !ok || n.Namespace != vm.Namespace {
		return nil, ruleErr(ErrNotFound, "node %q not found in namespace %q", vm.Node, vm.Namespace)
	}
	u := s.ix().used[vm.Node]
	if u.CPU+vm.CPU > n.Capacity.CPU || u.MemoryBytes+vm.MemoryBytes > n.Capacity.MemoryBytes || u.GPU+vm.GPU > n.Capacity.GPU {
		return nil, ruleErr(ErrNoRoom, "node %s no longer has room for vm %s", vm.Node, vm.Name)
	}
	used, own := s.ix().ports[vm.Node], n.OwnPorts()
	seen := map[int]bool{}
	for _, p := range vm.Ports() {
		if p < api.MinNodePort || p > 65535 || used[p] || seen[p] || own[p] {
			return nil, ruleErr(ErrNoRoom, "node %s port %d is taken", vm.Node, p)
		}
		seen[p] = true
	}
	// A VM deployed from a registry reference names its image before its
	// host has pulled and recorded it.
	if _, ok := s.Images[key(vm.Namespace, vm.Image)]; !ok && vm.ImageSource == "" {
		return nil, ruleErr(ErrNotFound, "image %q not found in namespace %q", vm.Image, vm.Namespace)
	}
	if vm.ISO != "" {
		if _, ok := s.ISOs[key(vm.Namespace, vm.ISO)]; !ok {
			return nil, ruleErr(ErrNotFound, "iso %q not found in namespace %q", vm.ISO, vm.Namespace)
		}
	}
	vm.Status, vm.Desired, vm.ErrorMessage, vm.ErrorReason = VMPending, VMRunning, "", ""
	vm.RevertGen, vm.ObservedRevertGen = 0, 0
	vm.UID = index
	s.VMs[k] = vm
	s.ix().addVM(k, vm)
	return vm.clone(), nil
}

func (s *State) vm(ns, name string) (*VM, error) {
	vm, ok := s.VMs[key(ns, name)]
	if !ok {
		return nil, ruleErr(ErrNotFound, "vm %q not found in namespace %q", name, ns)
	}
	return vm, nil
}

func (s *State) applyVMAction(c VMAction) (any, error) {
	vm, err := s.vm(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	refuse := func(why string) (any, error) {
		return nil, ruleErr(ErrConflict, "cannot %s vm %q: %s", c.Action, c.Name, why)
	}
	if op := vm.PendingOp; op != nil {
		// The operation stops the VM and starts it again when it is done:
		// an action now would be undone by it, or undo it.
		return refuse(fmt.Sprintf("a %s into image %q is under way; it restarts the VM when it is done", op.Kind, op.Image))
	}
	switch c.Action {
	case ActionStart:
		if vm.Desired == VMRunning && vm.Status != VMFailed {
			return refuse("it is already running")
		}
		vm.Desired = VMRunning
	case ActionStop:
		if vm.Desired == VMStopped {
			return refuse("it is already stopped")
		}
		vm.Desired = VMStopped
	case ActionSuspend:
		if vm.Desired != VMRunning {
			return refuse("it is not running (" + vm.Desired + ")")
		}
		vm.Desired = VMSuspended
	case ActionResume:
		if vm.Desired != VMSuspended {
			return refuse("it is not suspended (" + vm.Desired + ")")
		}
		vm.Desired = VMRunning
	case ActionRevert:
		vm.RevertGen++
		vm.Desired = VMRunning
	default:
		return nil, ruleErr(ErrInvalid, "unknown action %q: use start, stop, suspend, resume or revert", c.Action)
	}
	if vm.Status == VMFailed {
		vm.Status, vm.ErrorMessage, vm.ErrorReason = VMPending, "", ""
	}
	return vm.clone(), nil
}

var reportable = []string{VMPending, VMRunning, VMStopped, VMSuspended, VMFailed}

func (s *State) applyVMStatus(c VMStatus) (any, error) {
	vm, err := s.vm(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	if vm.Node != c.Node {
		return nil, ruleErr(ErrConflict, "vm %q runs on %s, not %s", c.Name, vm.Node, c.Node)
	}
	if !slices.Contains(reportable, c.Status) {
		return nil, ruleErr(ErrInvalid, "unknown VM status %q", c.Status)
	}
	if c.ErrorReason != "" && c.ErrorReason != api.ReasonBadRequest {
		return nil, ruleErr(ErrInvalid, "a VM fails for its host or for a BadRequest, not %q", c.ErrorReason)
	}
	vm.Status, vm.ErrorMessage, vm.ErrorReason = c.Status, c.ErrorMessage, ""
	if c.Status == VMFailed {
		vm.ErrorReason = c.ErrorReason
	}
	if c.ObservedRevertGen > vm.ObservedRevertGen {
		vm.ObservedRevertGen = c.ObservedRevertGen
	}
	return vm.clone(), nil
}

func (s *State) applyVMDelete(c VMDelete) (any, error) {
	vm, err := s.vm(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	if c.UID != 0 && vm.UID != c.UID {
		return nil, ruleErr(ErrNotFound, "vm %q of that incarnation is gone (another VM has the name now)", c.Name)
	}
	if op := vm.PendingOp; op != nil {
		// The operation cannot finish: its image must not stay Updating.
		if img, _, _, err := s.artifact(KindImage, c.Namespace, op.Image); err == nil && img.State == ImageUpdating {
			img.State, img.ErrorMessage = ImageFailed, op.Kind+" of vm "+vm.Name+" abandoned: the VM was deleted"
		}
	}
	delete(s.VMs, key(c.Namespace, c.Name))
	s.ix().removeVM(key(c.Namespace, c.Name), vm)
	return nil, nil
}

func (s *State) applyVMConfigCreate(c VMConfigCreate) (any, error) {
	cfg := c.Config.clone()
	if err := api.ValidateName("vmconfig name", cfg.Name, api.MaxVMConfigLen); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if err := api.ValidateMetadata(cfg.CustomMetadata); err != nil {
		return nil, ruleErr(ErrInvalid, "customMetadata: %s", err.Error())
	}
	if _, ok := s.Namespaces[cfg.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", cfg.Namespace)
	}
	// A registry reference ("<registry>/<path>:<tag>") is read at deploy.
	if _, ok := s.Images[key(cfg.Namespace, cfg.Image)]; !ok && !strings.Contains(cfg.Image, "/") {
		return nil, ruleErr(ErrNotFound, "image %q not found in namespace %q", cfg.Image, cfg.Namespace)
	}
	if cfg.ISO != "" {
		if _, ok := s.ISOs[key(cfg.Namespace, cfg.ISO)]; !ok {
			return nil, ruleErr(ErrNotFound, "iso %q not found in namespace %q", cfg.ISO, cfg.Namespace)
		}
	}
	k := key(cfg.Namespace, cfg.Name)
	if _, ok := s.VMConfigs[k]; ok {
		return nil, ruleErr(ErrAlreadyExists, "vmconfig %q already exists in namespace %q", cfg.Name, cfg.Namespace)
	}
	s.VMConfigs[k] = cfg
	return cfg.clone(), nil
}

func (s *State) applyVMConfigDelete(c VMConfigDelete) (any, error) {
	k := key(c.Namespace, c.Name)
	if _, ok := s.VMConfigs[k]; !ok {
		return nil, ruleErr(ErrNotFound, "vmconfig %q not found in namespace %q", c.Name, c.Namespace)
	}
	delete(s.VMConfigs, k)
	return nil, nil
}

func (s *State) applyBlobAddHolder(c BlobAddHolder) (any, error) {
	b, ok := s.Blobs[c.Digest]
	if !ok && s.ix().digests[c.Digest] > 0 {
		s.holdBlob(c.Digest, c.SizeBytes, c.Node)
		return nil, nil
	}
	if !ok {
		return nil, ruleErr(ErrNotFound, "blob %s not found", c.Digest)
	}
	if !slices.Contains(b.Holders, c.Node) {
		b.Holders = append(b.Holders, c.Node)
		slices.Sort(b.Holders)
	}
	return nil, nil
}

func (s *State) applyBlobDropHolder(c BlobDropHolder) (any, error) {
	b, ok := s.Blobs[c.Digest]
	if !ok {
		return nil, ruleErr(ErrNotFound, "blob %s not found", c.Digest)
	}
	b.Holders = slices.DeleteFunc(b.Holders, func(h string) bool { return h == c.Node })
	if len(b.Holders) == 0 {
		delete(s.Blobs, c.Digest)
	}
	return nil, nil
}

// blobInUse reports whether an image, an ISO or a VM references digest.
func (s *State) blobInUse(digest string) bool { return s.ix().digests[digest] > 0 }
