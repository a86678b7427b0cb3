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

// Node is what placement knows of a node. The fields placement reads on
// every node come first, so that a node that cannot take the VM costs one
// cache line of the scan.
type Node struct {
	FreeCPU    int
	FreeMemory int64 // bytes
	Ready      bool
	// Cordoned nodes take no new VM.
	Cordoned bool
	// HasImage says the node already holds the VM's image (nothing to
	// copy); HasTemplate that it holds a booted template of the VM's shape
	// (the VM starts without a boot).
	HasImage, HasTemplate bool
	Namespace             string
	TotalCPU              int
	TotalMemory           int64 // bytes
	TotalGPU, FreeGPU     int

	Name string
	Arch string
	Tags []string
	// Hypervisor runs the node's VMs (HypervisorVZ on Macs).
	Hypervisor string
	// MacOSVMs counts the macOS VMs placed on the node.
	MacOSVMs int
	// UsedPorts are the node ports its VMs hold.
	UsedPorts map[int]bool
}

// warmth ranks what a node has ready for the VM: a booted template, the
// image, or nothing.
func (n *Node) warmth() int {
	switch {
	case n.HasTemplate:
		return 2
	case n.HasImage:
		return 1
	}
	return 0
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

// room is the share of the node left free after the VM lands, averaged over
// CPU and memory (and GPUs when the node has any): 1 is empty, 0 is full.
func room(n *Node, r *Request) float64 {
	share := func(free, total float64) float64 {
		if total <= 0 {
			return 0
		}
		return free / total
	}
	sum := share(float64(n.FreeCPU-r.CPU), float64(n.TotalCPU)) + share(float64(n.FreeMemory-r.Memory), float64(n.TotalMemory))
	k := 2.0
	if n.TotalGPU > 0 {
		sum += share(float64(n.FreeGPU-r.GPU), float64(n.TotalGPU))
		k++
	}
	return sum / k
}

// Place picks the node for r among nodes. Nodes of other namespaces are
// ignored (and not named in the error). Without TagRequired, nodes carrying
// the tag come first; then nodes with a booted template of the VM's shape,
// then nodes holding its image (the VM starts sooner there); then the
// strategy's score. Ties go to the node whose name sorts first.
func Place(nodes []Node, r Request) (string, error) {
	var (
		best       *Node
		bestScore  float64
		bestTag    bool
		bestWarmth int
	)
	packs := r.Strategy == StrategyMostAllocated
	// The checks every request has (namespace, ready, cordoned, CPU,
	// memory) run inline, cheapest first; the others only on the nodes
	// that pass them.
	var rest []*check
	for _, c := range applying(&r) {
		switch c.name {
		case "namespace", "ready", "cordoned", "cpu", "memory":
		default:
			rest = append(rest, c)
		}
	}
	for i := range nodes {
		n := &nodes[i]
		if n.FreeCPU < r.CPU || n.FreeMemory < r.Memory || !n.Ready || n.Cordoned || n.Namespace != r.Namespace {
			continue
		}
		if len(rest) > 0 && !fits(n, &r, rest) {
			continue
		}
		score := room(n, &r)
		if packs {
			score = -score
		}
		tagged := r.Tag != "" && slices.Contains(n.Tags, r.Tag)
		warmth := n.warmth()
		switch {
		case best == nil,
			tagged && !bestTag,
			tagged == bestTag && warmth > bestWarmth,
			tagged == bestTag && warmth == bestWarmth && score > bestScore,
			tagged == bestTag && warmth == bestWarmth && score == bestScore && n.Name < best.Name:
			best, bestScore, bestTag, bestWarmth = n, score, tagged, warmth
		}
	}
	if best == nil {
		var reasons []Reason
		for _, n := range nodes {
			if n.Namespace == r.Namespace {
				reasons = append(reasons, Reason{Node: n.Name, Reason: Fits(n, r)})
			}
		}
		slices.SortFunc(reasons, func(a, b Reason) int { return strings.Compare(a.Node, b.Node) })
		return "", &NoFitError{Namespace: r.Namespace, Reasons: reasons}
	}
	return best.Name, nil
}
