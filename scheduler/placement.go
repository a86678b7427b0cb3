package scheduler

import "github.com/svc-project/svc/raftfsm"

// Placement is a validated deploy for the leader to place: the VM to
// create, and the constraints on its node.
type Placement struct {
	// VM is the VM to create; its node, address, ports and password are the
	// leader's to choose. Its name is empty when NamePrefix is set.
	VM raftfsm.VM
	// NamePrefix, when set, makes the leader name the VM "<prefix>-" and 5
	// random characters.
	NamePrefix string
	// Arch is the architecture the image needs ("" for any).
	Arch string
	// MacOS says the image is a macOS guest.
	MacOS bool
	// Node pins the VM to one node.
	Node string
	// Tag prefers (or, with TagRequired, requires) nodes carrying it.
	Tag         string
	TagRequired bool
	// Scheduler is StrategyDefault or StrategyMostAllocated.
	Scheduler string
}

// Request returns what the placement's VM needs of a node.
func (p Placement) Request() Request {
	r := Request{
		Namespace: p.VM.Namespace, CPU: p.VM.CPU, Memory: p.VM.MemoryBytes, GPU: p.VM.GPU, Arch: p.Arch, MacOS: p.MacOS,
		Node: p.Node, Tag: p.Tag, TagRequired: p.TagRequired, Strategy: p.Scheduler, SharedStorage: p.VM.SharedStorage,
	}
	r.Disk = p.VM.DiskBound()
	for _, rp := range p.VM.ReservedPorts {
		r.HostPorts = append(r.HostPorts, rp.Host)
	}
	return r
}
