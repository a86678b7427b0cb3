package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/svc-project/svc/api"
)

// HypervisorVZ is the hypervisor of Mac nodes (Apple's Virtualization
// framework).
const HypervisorVZ = "vz"

// MaxMacOSVMs is how many macOS VMs one Mac may run: Apple's licence for
// macOS allows two virtual copies per Mac.
const MaxMacOSVMs = 2

// Strategies (the schedulers a deploy names).
const (
	// StrategyDefault spreads load: the node with the most room left wins.
	StrategyDefault = api.SchedulerDefault
	// StrategyMostAllocated packs: the node with the least room left wins.
	StrategyMostAllocated = api.SchedulerMostAllocated
)

// Node is what placement knows of a node.
type Node struct {
	Name      string
	Namespace string
	Ready     bool
	// Cordoned nodes take no new VM.
	Cordoned          bool
	TotalCPU, FreeCPU int
	TotalMemory       int64 // bytes
	FreeMemory        int64 // bytes
	TotalGPU, FreeGPU int
	Arch              string
	Tags              []string
	// Templates are the shape keys of the booted templates the node holds.
	Templates []string
	// Hot are the shape keys of the node's free hot guests.
	Hot []string
	// Hypervisor runs the node's VMs (HypervisorVZ on Macs).
	Hypervisor string
	// MacOSVMs counts the macOS VMs placed on the node.
	MacOSVMs int
	// UsedPorts are the node ports its VMs hold.
	UsedPorts map[int]bool
	// SharedStorage says the node offers namespaces' shared storage; when
	// it does not, SharedStorageWhy says why.
	SharedStorage    bool
	SharedStorageWhy string
	// DiskRoom is what new work may take on the node's disk, when
	// DiskRoomKnown.
	DiskRoom      int64
	DiskRoomKnown bool
}

// Request is what a VM needs.
type Request struct {
	Namespace string
	CPU       int
	Memory    int64 // bytes
	GPU       int
	Arch      string // "" for any
	// MacOS says the image is a macOS guest: it runs on arm64 vz nodes
	// only, MaxMacOSVMs at a time.
	MacOS bool
	// Node pins the VM to one node.
	Node string
	// Tag prefers (or, with TagRequired, requires) nodes carrying it.
	Tag         string
	TagRequired bool
	// HostPorts are node ports the VM reserves (reservedPorts).
	HostPorts []int
	Strategy  string
	// ImageHolders are the nodes that hold the VM's image; Template is the
	// key of the VM's template shape ("" when it has none). Placement
	// prefers a node with a free hot guest of the shape, then one with the
	// template, then one with the image.
	ImageHolders []string
	Template     string
	// SharedStorage asks for the namespace's shared folder on the node.
	SharedStorage bool
	// Disk is what the VM's disk may take on its node (0: not known).
	Disk int64
}

// Reason says why one node cannot take the VM.
type Reason struct {
	Node   string
	Reason string
}

// NoFitError is returned when no node can take the VM.
type NoFitError struct {
	Namespace string
	Reasons   []Reason
}

func (e *NoFitError) Error() string {
	if len(e.Reasons) == 0 {
		return fmt.Sprintf("no node can take the VM: namespace %q has no nodes", e.Namespace)
	}
	parts := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		parts[i] = r.Node + ": " + r.Reason
	}
	return "no node can take the VM: " + strings.Join(parts, "; ")
}

// check is one rule a node must meet to take a VM, in one place for both
// uses: ok is the allocation-free test placement runs on every node, why
// explains a failure for the answer when no node fits (as Nomad's
// feasibility checks do). A new rule is a new entry.
type check struct {
	name string
	// applies, when set, says whether the check can fail for r at all;
	// placement runs only the checks that apply.
	applies func(r *Request) bool
	ok      func(n *Node, r *Request) bool
	why     func(n *Node, r *Request) string
}

// checks are run in order; the first that fails names the node's reason.
var checks = [...]check{
	{"namespace", nil, func(n *Node, r *Request) bool { return n.Namespace == r.Namespace },
		func(n *Node, _ *Request) string { return fmt.Sprintf("dedicated to namespace %s", n.Namespace) }},
	{"ready", nil, func(n *Node, _ *Request) bool { return n.Ready },
		func(*Node, *Request) string { return "NOT READY" }},
	{"cordoned", nil, func(n *Node, _ *Request) bool { return !n.Cordoned },
		func(*Node, *Request) string { return "cordoned: it takes no new VMs (svc node uncordon puts it back)" }},
	{"pinned", func(r *Request) bool { return r.Node != "" }, func(n *Node, r *Request) bool { return n.Name == r.Node },
		func(_ *Node, r *Request) string { return "not the requested node " + r.Node }},
	{"arch", func(r *Request) bool { return r.Arch != "" }, func(n *Node, r *Request) bool { return n.Arch == "" || n.Arch == r.Arch },
		func(n *Node, r *Request) string { return fmt.Sprintf("arch %s, the image needs %s", n.Arch, r.Arch) }},
	{"macos host", func(r *Request) bool { return r.MacOS }, func(n *Node, _ *Request) bool { return n.Hypervisor == HypervisorVZ && n.Arch == "arm64" },
		func(n *Node, _ *Request) string {
			return fmt.Sprintf("a macOS image runs on Apple silicon Macs (hypervisor vz, arch arm64); this node is %s/%s", orUnknown(n.Hypervisor), n.Arch)
		}},
	{"macos limit", func(r *Request) bool { return r.MacOS }, func(n *Node, _ *Request) bool { return n.MacOSVMs < MaxMacOSVMs },
		func(n *Node, _ *Request) string {
			return fmt.Sprintf("it runs %d macOS VMs, the most Apple's macOS licence allows per Mac (%d)", n.MacOSVMs, MaxMacOSVMs)
		}},
	{"tag", func(r *Request) bool { return r.Tag != "" && r.TagRequired }, func(n *Node, r *Request) bool { return slices.Contains(n.Tags, r.Tag) },
		func(_ *Node, r *Request) string { return "no tag " + r.Tag }},
	{"cpu", nil, func(n *Node, r *Request) bool { return n.FreeCPU >= r.CPU },
		func(n *Node, r *Request) string {
			return fmt.Sprintf("not enough CPU (%d free, %d needed)", n.FreeCPU, r.CPU)
		}},
	{"memory", nil, func(n *Node, r *Request) bool { return n.FreeMemory >= r.Memory },
		func(n *Node, r *Request) string {
			return fmt.Sprintf("not enough memory (%s free, %s needed)", gib(n.FreeMemory), gib(r.Memory))
		}},
	{"gpu", func(r *Request) bool { return r.GPU > 0 }, func(n *Node, r *Request) bool { return n.FreeGPU >= r.GPU },
		func(n *Node, r *Request) string {
			return fmt.Sprintf("not enough GPUs (%d free, %d needed)", n.FreeGPU, r.GPU)
		}},
	{"ports", func(r *Request) bool { return len(r.HostPorts) > 0 }, func(n *Node, r *Request) bool { return takenPort(n, r) == 0 },
		func(n *Node, r *Request) string { return fmt.Sprintf("port %d is taken", takenPort(n, r)) }},
	{"shared storage", func(r *Request) bool { return r.SharedStorage }, func(n *Node, _ *Request) bool { return n.SharedStorage },
		func(n *Node, _ *Request) string { return "it offers no shared storage: " + n.SharedStorageWhy }},
	{"disk", func(r *Request) bool { return r.Disk > 0 }, func(n *Node, r *Request) bool { return !n.DiskRoomKnown || n.DiskRoom >= r.Disk },
		func(n *Node, r *Request) string {
			return fmt.Sprintf("not enough room on its disk (%s above its floor and what it has promised, %s needed)", gib(n.DiskRoom), gib(r.Disk))
		}},
}

// applying returns the checks that can fail for r.
func applying(r *Request) []*check {
	out := make([]*check, 0, len(checks))
	for i := range checks {
		if c := &checks[i]; c.applies == nil || c.applies(r) {
			out = append(out, c)
		}
	}
	return out
}

// takenPort returns a node port r reserves that n's VMs hold, or 0.
func takenPort(n *Node, r *Request) int {
	for _, p := range r.HostPorts {
		if n.UsedPorts[p] {
			return p
		}
	}
	return 0
}

func fits(n *Node, r *Request, cs []*check) bool {
	for _, c := range cs {
		if !c.ok(n, r) {
			return false
		}
	}
	return true
}

// Fits returns "" when n can take r, or why it cannot.
func Fits(n Node, r Request) string {
	for _, c := range applying(&r) {
		if !c.ok(&n, &r) {
			return c.why(&n, &r)
		}
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "libvirt"
	}
	return s
}

func gib(b int64) string { return fmt.Sprintf("%.2fGi", float64(b)/(1<<30)) }
