package raftfsm

import (
	"maps"
	"slices"
	"time"
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
	CPU            int               `json:"cpu"`
	MemoryBytes    int64             `json:"memoryBytes"`
	GPU            int               `json:"gpu"`
	GPUPassthrough bool              `json:"gpuPassthrough"`
	ISO            string            `json:"iso,omitempty"`
	LegacyIO       bool              `json:"legacyIO"`
	NetBoost       bool              `json:"netBoost"`
	Display        Display           `json:"display"`
	CustomMetadata map[string]string `json:"customMetadata,omitempty"`
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
	VMConfig  string `json:"vmConfig,omitempty"`
	Owner     string `json:"owner,omitempty"`
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
	ErrorReason       string    `json:"errorReason,omitempty"`
	ObservedRevertGen int64     `json:"observedRevertGen"`
	CreatedAt         time.Time `json:"createdAt"`
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
	c.CustomMetadata = maps.Clone(vm.CustomMetadata)
	if vm.PendingOp != nil {
		op := *vm.PendingOp
		c.PendingOp = &op
	}
	return &c
}

// VMConfig is a template that VMs are deployed from.
type VMConfig struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Image     string `json:"image"`
	// MemoryGiB keeps what the user gave (0: the default at deploy time).
	MemoryGiB   float64 `json:"memoryGiB"`
	Scheduler   string  `json:"scheduler,omitempty"`
	Tag         string  `json:"tag,omitempty"`
	TagRequired bool    `json:"tagRequired"`
	Node        string  `json:"node,omitempty"`
	VMOptions
	Owner     string    `json:"owner,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

func (c *VMConfig) clone() *VMConfig {
	d := *c
	d.CustomMetadata = maps.Clone(c.CustomMetadata)
	return &d
}

// Image states: Updating while a commit or save writes its new content.
const (
	ImageReady    = "Ready"
	ImageUpdating = "Updating"
	ImageFailed   = "Failed"
)

// Image is a disk image (or an ISO) of a namespace: a name bound to a
// content digest; which nodes hold the blob is the Blob record's.
type Image struct {
	Name        string    `json:"name"`
	Namespace   string    `json:"namespace"`
	Digest      string    `json:"digest"`
	SizeBytes   int64     `json:"sizeBytes"`
	VirtualSize int64     `json:"virtualSize"`
	Format      string    `json:"format"`
	Arch        string    `json:"arch"`
	Description string    `json:"description,omitempty"`
	SourceType  string    `json:"sourceType"`
	Source      string    `json:"source,omitempty"`
	Owner       string    `json:"owner,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	// State is "" (Ready: records from before states), ImageReady,
	// ImageUpdating or ImageFailed; ErrorMessage says why the last commit or
	// save failed (the content before it is intact).
	State        string `json:"state,omitempty"`
	ErrorMessage string `json:"errorMessage,omitempty"`
}

// Usable reports whether a VM can start from the image: it has content.
func (img *Image) Usable() bool { return img.Digest != "" }

func key(ns, name string) string { return ns + "/" + name }
