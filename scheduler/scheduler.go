package scheduler

import (
	"fmt"
	"slices"
	"strings"
)

// Strategies.
const (
	// StrategyDefault spreads load: the node with the most room left wins.
	StrategyDefault = "default"
	// StrategyMostAllocated packs: the node with the least room left wins.
	StrategyMostAllocated = "most-allocated"
)

// Node is what placement knows of a node.
type Node struct {
	Name      string
	Namespace string
	Ready     bool
	Arch      string
	Tags      []string

	TotalCPU, FreeCPU       int
	TotalMemory, FreeMemory int64 // bytes
	TotalGPU, FreeGPU       int
	// UsedPorts are the node ports its VMs hold.
	UsedPorts map[int]bool
}

// Request is what a VM needs.
type Request struct {
	Namespace string
	CPU       int
	Memory    int64 // bytes
	GPU       int
	Arch      string // "" for any
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

// ValidStrategy reports whether s names a strategy ("" is the default).
func ValidStrategy(s string) bool {
	return s == "" || s == StrategyDefault || s == StrategyMostAllocated
}

// fits is the allocation-free test behind Fits.
func fits(n *Node, r *Request) bool {
	if n.Namespace != r.Namespace || !n.Ready || (r.Node != "" && n.Name != r.Node) ||
		(r.Arch != "" && n.Arch != "" && n.Arch != r.Arch) ||
		n.FreeCPU < r.CPU || n.FreeMemory < r.Memory || n.FreeGPU < r.GPU {
		return false
	}
	if r.Tag != "" && r.TagRequired && !slices.Contains(n.Tags, r.Tag) {
		return false
	}
	for _, p := range r.HostPorts {
		if n.UsedPorts[p] {
			return false
		}
	}
	return true
}

// Fits returns "" when n can take r, or why it cannot.
func Fits(n Node, r Request) string {
	switch {
	case n.Namespace != r.Namespace:
		return fmt.Sprintf("dedicated to namespace %s", n.Namespace)
	case !n.Ready:
		return "NOT READY"
	case r.Node != "" && n.Name != r.Node:
		return "not the requested node " + r.Node
	case r.Arch != "" && n.Arch != "" && n.Arch != r.Arch:
		return fmt.Sprintf("arch %s, the image needs %s", n.Arch, r.Arch)
	case r.Tag != "" && r.TagRequired && !slices.Contains(n.Tags, r.Tag):
		return "no tag " + r.Tag
	case n.FreeCPU < r.CPU:
		return fmt.Sprintf("not enough CPU (%d free, %d needed)", n.FreeCPU, r.CPU)
	case n.FreeMemory < r.Memory:
		return fmt.Sprintf("not enough memory (%s free, %s needed)", gib(n.FreeMemory), gib(r.Memory))
	case n.FreeGPU < r.GPU:
		return fmt.Sprintf("not enough GPUs (%d free, %d needed)", n.FreeGPU, r.GPU)
	}
	for _, p := range r.HostPorts {
		if n.UsedPorts[p] {
			return fmt.Sprintf("port %d is taken", p)
		}
	}
	return ""
}

func gib(b int64) string { return fmt.Sprintf("%.2fGi", float64(b)/(1<<30)) }

// room is the share of the node left free after the VM lands, averaged over
// CPU and memory (and GPUs when the node has any): 1 is empty, 0 is full.
func room(n Node, r Request) float64 {
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
// the tag come first. Ties go to the node whose name sorts first.
func Place(nodes []Node, r Request) (string, error) {
	var (
		best      *Node
		bestScore float64
		bestTag   bool
	)
	packs := r.Strategy == StrategyMostAllocated
	for i := range nodes {
		n := &nodes[i]
		if !fits(n, &r) {
			continue
		}
		score := room(*n, r)
		if packs {
			score = -score
		}
		tagged := r.Tag != "" && slices.Contains(n.Tags, r.Tag)
		switch {
		case best == nil,
			tagged && !bestTag,
			tagged == bestTag && score > bestScore,
			tagged == bestTag && score == bestScore && n.Name < best.Name:
			best, bestScore, bestTag = n, score, tagged
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
