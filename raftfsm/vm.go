package raftfsm

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/svc-project/svc/api"
)

// VM states: Desired is what the user asked for; Status is what the node last
// reported.
const (
	VMPending   = "Pending"
	VMRunning   = "Running"
	VMStopped   = "Stopped"
	VMSuspended = "Suspended"
	VMFailed    = "Failed"
)

// PortMap forwards a node port to a guest port.
type PortMap struct {
	Host  int `json:"host"`
	Guest int `json:"guest"`
}

// Display is the guest display the user asked for.
type Display struct {
	Width  int `json:"width,omitempty"`
	Height int `json:"height,omitempty"`
	DPI    int `json:"dpi,omitempty"`
}

// VMOptions are the settings a VM config can hold and a deploy can override.
type VMOptions struct {
	CPU            int    `json:"cpu"`
	MemoryBytes    int64  `json:"memoryBytes"`
	GPU            int    `json:"gpu"`
	GPUPassthrough bool   `json:"gpuPassthrough"`
	ISO            string `json:"iso,omitempty"`
	LegacyIO       bool   `json:"legacyIO"`
	NetBoost       bool   `json:"netBoost"`
	// SharedStorage gives the VM its namespace's shared folder on its node.
	SharedStorage  bool              `json:"sharedStorage,omitempty"`
	Display        Display           `json:"display"`
	CustomMetadata map[string]string `json:"customMetadata,omitempty"`
	// TTLSeconds, when set, is the VM's time-to-live: the leader sets its
	// ExpiresAt at placement.
	TTLSeconds int64 `json:"ttlSeconds,omitempty"`
}

// VM is a VM placed on a node.
type VM struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	Node        string `json:"node"`
	Image       string `json:"image"`
	ImageDigest string `json:"imageDigest"`
	ImageFormat string `json:"imageFormat"`
	// ImageSource is, for a VM deployed from a registry reference, that
	// reference pinned to its manifest ("<repo>:<tag>@sha256:..."): where
	// the host pulls ImageDigest when no peer holds it.
	ImageSource string `json:"imageSource,omitempty"`
	// ISODigest is the content of the ISO (VMOptions.ISO) attached as a CD-ROM.
	ISODigest string `json:"isoDigest,omitempty"`
	Arch      string `json:"arch"`
	// OS, NVRAMDigest and HardwareModel are the image's (Image.OS...).
	OS            string `json:"os,omitempty"`
	NVRAMDigest   string `json:"nvramDigest,omitempty"`
	HardwareModel string `json:"hardwareModel,omitempty"`
	VMConfig      string `json:"vmConfig,omitempty"`
	Owner         string `json:"owner,omitempty"`
	VMOptions

	// Node address and ports, stamped by the leader.
	IP      string `json:"ip"`
	SSHPort int    `json:"sshPort"`
	VNCPort int    `json:"vncPort"`
	// VNCPassword guards the VM's screen; the leader makes it at placement.
	VNCPassword     string    `json:"vncPassword,omitempty"`
	ScreensharePort int       `json:"screensharePort"`
	ReservedPorts   []PortMap `json:"reservedPorts,omitempty"`

	// UID tells this VM from an earlier one of the same name: the index of
	// the log entry that created it.
	UID       uint64 `json:"uid,omitempty"`
	Desired   string `json:"desired"`
	RevertGen int64  `json:"revertGen"`
	// PendingOp is a commit or save its host is carrying out.
	PendingOp *ImageOp `json:"pendingOp,omitempty"`

	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	// ErrorReason, with a Failed status, is the API reason of a failure
	// that is the caller's to fix (BadRequest: the disk was refused); empty
	// for a failure of the host.
	ErrorReason       string `json:"errorReason,omitempty"`
	ObservedRevertGen int64  `json:"observedRevertGen"`
	// StartedFrom says how the VM's guest last started from nothing: from
	// a booted template (StartedFromTemplate) or by booting.
	StartedFrom string `json:"startedFrom,omitempty"`
	// Domain, when set, is the VM's domain on its node: the hot guest its
	// deploy claimed (hot.go). Otherwise the node names it after the VM.
	Domain string `json:"domain,omitempty"`
	// Guest is what the guest's agent last said (nil: no agent answered).
	Guest *GuestReport `json:"guest,omitempty"`
	// Identity says whether the image's identity step made the guest its
	// own since it last started from nothing (nil: not started yet).
	Identity *IdentityReport `json:"identity,omitempty"`
	// DiskBytes is the size of the VM's disk as its guest sees it (0:
	// not known); BaseDiskBytes is its image's, which a revert goes back to.
	DiskBytes     int64 `json:"diskBytes,omitempty"`
	BaseDiskBytes int64 `json:"baseDiskBytes,omitempty"`
	// ExpiresAt, when set, is when the leader deletes the VM (its
	// time-to-live from its deploy, moved by VMExtend).
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// DeployBy, set by its deploy, is when that deploy has given up on a
	// VM that is not Running yet: the leader deletes a VM still holding
	// it after then (StaleDeploys), in case the deploy could not (its
	// leader was deposed while it waited). The VM's first Running report
	// clears it.
	DeployBy  *time.Time `json:"deployBy,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
}

// Ports returns every node port the VM holds.
func (vm *VM) Ports() []int {
	out := []int{vm.SSHPort, vm.VNCPort, vm.ScreensharePort}
	for _, p := range vm.ReservedPorts {
		out = append(out, p.Host)
	}
	return out
}

func (vm *VM) clone() *VM {
	c := *vm
	c.ReservedPorts = slices.Clone(vm.ReservedPorts)
	if vm.Guest != nil {
		g := *vm.Guest
		g.IPs = slices.Clone(vm.Guest.IPs)
		c.Guest = &g
	}
	if vm.Identity != nil {
		id := *vm.Identity
		c.Identity = &id
	}
	c.CustomMetadata = maps.Clone(vm.CustomMetadata)
	if vm.ExpiresAt != nil {
		t := *vm.ExpiresAt
		c.ExpiresAt = &t
	}
	if vm.DeployBy != nil {
		t := *vm.DeployBy
		c.DeployBy = &t
	}
	if vm.PendingOp != nil {
		op := *vm.PendingOp
		c.PendingOp = &op
	}
	return &c
}

func (vm *VM) sortKey() string { return key(vm.Namespace, vm.Name) }

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

var reportable = []string{VMPending, VMRunning, VMStopped, VMSuspended, VMFailed}

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
	// StartedFrom, when set, is how the guest started (VM.StartedFrom).
	StartedFrom string `json:"startedFrom,omitempty"`
	// Guest, when set, replaces what the guest's agent said (VM.Guest); an
	// empty report clears it (the agent went away).
	Guest *GuestReport `json:"guest,omitempty"`
	// Identity, when set, replaces VM.Identity.
	Identity *IdentityReport `json:"identity,omitempty"`
}

// IdentityReport says how the image's identity step went (IdentitySet...),
// with a message where it did not run or failed.
type IdentityReport struct {
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
}

// Identity states (IdentityReport.State): the API's.
const (
	IdentityPending = api.IdentityPending
	IdentitySet     = api.IdentitySet
	IdentityNone    = api.IdentityNone
	IdentityFailed  = api.IdentityFailed
)

// maxIdentityMessage bounds an identity report's message.
const maxIdentityMessage = 1024

// MaxGuestIPs bounds the addresses a guest report keeps.
const MaxGuestIPs = 16

// GuestReport is what a guest's agent says of it.
type GuestReport struct {
	Agent bool     `json:"agent"`
	OS    string   `json:"os,omitempty"`
	IPs   []string `json:"ips,omitempty"`
}

// VMDelete removes a VM; its node removes the domain and disk. With a UID,
// only that incarnation of the name is removed (a failed deploy cleans up
// its own VM, never one created under the same name meanwhile).
type VMDelete struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       uint64 `json:"uid,omitempty"`
	// Unrun deletes the VM only while its deploy has not seen it run
	// (DeployBy set): the removal of a failed deploy's VM, which must not
	// take one that started meanwhile.
	Unrun bool `json:"unrun,omitempty"`
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
	if n.Cordoned {
		return nil, ruleErr(ErrConflict, "node %s is cordoned: it takes no new VMs", vm.Node)
	}
	if err := s.checkQuota(vm); err != nil {
		return nil, err
	}
	if err := s.checkSharedStorage(vm); err != nil {
		return nil, err
	}
	if vm.ExpiresAt != nil && vm.ExpiresAt.Sub(vm.CreatedAt) > MaxTTL {
		return nil, ruleErr(ErrInvalid, "vm %q: a time-to-live is at most %s", vm.Name, MaxTTL)
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
	claimHot(n, vm)
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
		vm.DiskBytes = vm.BaseDiskBytes
	default:
		return nil, ruleErr(ErrInvalid, "unknown action %q: use start, stop, suspend, resume or revert", c.Action)
	}
	if vm.Status == VMFailed {
		vm.Status, vm.ErrorMessage, vm.ErrorReason = VMPending, "", ""
	}
	return vm.clone(), nil
}

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
	if c.StartedFrom != "" && c.StartedFrom != StartedFromTemplate && c.StartedFrom != StartedFromBoot && c.StartedFrom != StartedFromHot {
		return nil, ruleErr(ErrInvalid, "a VM starts from a hot guest, a template or a boot, not %q", c.StartedFrom)
	}
	if id := c.Identity; id != nil && !slices.Contains([]string{IdentityPending, IdentitySet, IdentityNone, IdentityFailed}, id.State) {
		return nil, ruleErr(ErrInvalid, "unknown identity state %q", id.State)
	}
	if c.ErrorReason != "" && c.ErrorReason != api.ReasonBadRequest && c.ErrorReason != api.ReasonConflict {
		return nil, ruleErr(ErrInvalid, "a VM fails for its host, a BadRequest or a Conflict (no room), not %q", c.ErrorReason)
	}
	vm.Status, vm.ErrorMessage, vm.ErrorReason = c.Status, c.ErrorMessage, ""
	if c.Status == VMRunning {
		vm.DeployBy = nil // its deploy succeeded
	}
	if c.Status == VMFailed {
		vm.ErrorReason = c.ErrorReason
	}
	if c.ObservedRevertGen > vm.ObservedRevertGen {
		vm.ObservedRevertGen = c.ObservedRevertGen
	}
	if c.StartedFrom != "" {
		vm.StartedFrom = c.StartedFrom
	}
	if id := c.Identity; id != nil {
		cp := *id
		if len(cp.Message) > maxIdentityMessage {
			cp.Message = cp.Message[:maxIdentityMessage]
		}
		vm.Identity = &cp
	}
	if g := c.Guest; g != nil {
		vm.Guest = nil
		if g.Agent {
			cp := *g
			cp.IPs = slices.Clone(g.IPs[:min(len(g.IPs), MaxGuestIPs)])
			if len(cp.OS) > 256 {
				cp.OS = cp.OS[:256]
			}
			vm.Guest = &cp
		}
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
	if c.Unrun && vm.DeployBy == nil {
		return nil, ruleErr(ErrConflict, "vm %q ran: its deploy no longer removes it", c.Name)
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

func vms(s *State) map[string]*VM { return s.VMs }

// DiskBound is how much the VM's disk file may take on its host: the size
// its guest sees, and room for the file's own tables over it (1/64: a
// qcow2's take under 1/500). 0 when the size is not known.
func (vm *VM) DiskBound() int64 {
	b := max(vm.DiskBytes, vm.BaseDiskBytes)
	return b + b/64
}

// VMs returns the VMs of a namespace ("" for every namespace), sorted.
func (f *FSM) VMs(ns string) []VM {
	return list(f, vms, func(vm *VM) bool { return ns == "" || vm.Namespace == ns })
}

// VMsOnNode returns the VMs placed on a node, sorted.
func (f *FSM) VMsOnNode(node string) []VM {
	return list(f, func(s *State) map[string]*VM { return s.ix().nodeVMs[node] }, nil)
}

// VM returns one VM.
func (f *FSM) VM(ns, name string) (VM, bool) { return get(f, vms, key(ns, name)) }
