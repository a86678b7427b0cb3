package raftfsm

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// NodeView is a node with what its VMs take.
type NodeView struct {
	Node
	Used Usage
}

// Capacity is what a node offers to VMs.
type Capacity struct {
	CPU         int   `json:"cpu"`
	MemoryBytes int64 `json:"memoryBytes"`
	GPU         int   `json:"gpu"`
}

// NodeFacts are what a peer reports about itself through gossip.
type NodeFacts struct {
	Addr       string `json:"addr"`
	APIAddr    string `json:"apiAddr"`
	RaftAddr   string `json:"raftAddr"`
	GossipAddr string `json:"gossipAddr"`
	TLSPort    int    `json:"tlsPort,omitempty"`
	Arch       string `json:"arch"`
	// Hypervisor runs the node's VMs: libvirt, vz (Macs) or fake.
	Hypervisor string `json:"hypervisor,omitempty"`
	Version    string `json:"version"`
	// Level is the command level the node's svc knows (raftfsm.Level; 0
	// from an svc before levels, which knew level 1).
	Level    int      `json:"level,omitempty"`
	Capacity Capacity `json:"capacity"`
	// CPUOvercommit is how many vCPUs the node offers per CPU (0: 1).
	CPUOvercommit float64 `json:"cpuOvercommit,omitempty"`
	// SharedStorage says the node offers namespaces' shared storage; when
	// it does not, SharedStorageWhy says why.
	SharedStorage    bool   `json:"sharedStorage,omitempty"`
	SharedStorageWhy string `json:"sharedStorageWhy,omitempty"`
	// DiskRoom is what new work may take on the node's data dir disk
	// (its free space less its floor and what it has promised), in steps
	// of 64 MiB; DiskRoomKnown says the node reports it.
	DiskRoom      int64 `json:"diskRoom,omitempty"`
	DiskRoomKnown bool  `json:"diskRoomKnown,omitempty"`
}

// OwnPorts are the ports the node's peer listens on at its address (API,
// HTTPS, Raft, gossip): no VM may take them.
func (f NodeFacts) OwnPorts() map[int]bool {
	out := map[int]bool{}
	if f.TLSPort > 0 {
		out[f.TLSPort] = true
	}
	for _, a := range []string{f.APIAddr, f.RaftAddr, f.GossipAddr} {
		if _, port, err := net.SplitHostPort(a); err == nil {
			if n, err := strconv.Atoi(port); err == nil && n > 0 {
				out[n] = true
			}
		}
	}
	return out
}

// Node is one peer of the cluster as the replicated state knows it. Its facts
// come from the peer's gossip report; tags, namespace and phase are cluster
// decisions.
type Node struct {
	Name      string   `json:"name"`
	Namespace string   `json:"namespace"`
	Tags      []string `json:"tags"`
	// Cordoned nodes take no new VM (they keep theirs).
	Cordoned bool `json:"cordoned,omitempty"`
	NodeFacts

	// Templates are the booted templates the node holds ready.
	Templates []Template `json:"templates,omitempty"`
	// Hot are the node's free hot guests (hot.go); HotSpent the domains of
	// the last ones claimed, never offered again.
	Hot      []HotGuest `json:"hot,omitempty"`
	HotSpent []string   `json:"hotSpent,omitempty"`
	// SharedUsage is what each namespace's shared folder takes on the node,
	// as its peer last reported.
	SharedUsage map[string]int64 `json:"sharedUsage,omitempty"`

	Phase       string    `json:"phase"`
	PhaseReason string    `json:"phaseReason,omitempty"`
	PhaseSince  time.Time `json:"phaseSince"`
	JoinedAt    time.Time `json:"joinedAt"`
}

// clone returns a deep copy.
func (n *Node) clone() *Node {
	c := *n
	c.Tags = make([]string, len(n.Tags))
	copy(c.Tags, n.Tags)
	c.Templates = slices.Clone(n.Templates)
	c.Hot, c.HotSpent = slices.Clone(n.Hot), slices.Clone(n.HotSpent)
	c.SharedUsage = maps.Clone(n.SharedUsage)
	return &c
}

// HasTag reports whether the node carries tag.
func (n *Node) HasTag(tag string) bool {
	for _, t := range n.Tags {
		if t == tag {
			return true
		}
	}
	return false
}

// Usage is what the VMs placed on a node take.
type Usage struct {
	CPU         int   `json:"cpu"`
	MemoryBytes int64 `json:"memoryBytes"`
	GPU         int   `json:"gpu"`
}

// NodeUpsert records a peer's facts from its gossip report. A new node starts
// in namespace svc-default with no tags and the given phase.
type NodeUpsert struct {
	Name string `json:"name"`
	NodeFacts
	Phase string    `json:"phase"`
	Time  time.Time `json:"time"`
}

// NodeSetPhase records a READY / NOT READY transition.
type NodeSetPhase struct {
	Name   string    `json:"name"`
	Phase  string    `json:"phase"`
	Reason string    `json:"reason,omitempty"`
	Time   time.Time `json:"time"`
}

// NodeTag adds (TypeNodeTag) or removes (TypeNodeUntag) one tag of a node of
// a namespace.
type NodeTag struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Tag       string `json:"tag"`
}

// NodeSetNamespace dedicates a node to a namespace.
type NodeSetNamespace struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

func validPhase(p string) bool { return p == api.PhaseReady || p == api.PhaseNotReady }

func (s *State) applyNodeUpsert(c NodeUpsert) (any, error) {
	if c.Name == "" {
		return nil, ruleErr(ErrInvalid, "node name must not be empty")
	}
	if c.Capacity.CPU < 0 || c.Capacity.MemoryBytes < 0 || c.Capacity.GPU < 0 {
		return nil, ruleErr(ErrInvalid, "node %q: capacity must not be negative", c.Name)
	}
	n, ok := s.Nodes[c.Name]
	if !ok {
		phase := c.Phase
		if phase == "" {
			phase = api.PhaseNotReady
		}
		if !validPhase(phase) {
			return nil, ruleErr(ErrInvalid, "node %q: unknown phase %q", c.Name, phase)
		}
		n = &Node{Name: c.Name, Namespace: api.DefaultNamespace, Tags: []string{}, Phase: phase, PhaseSince: c.Time, JoinedAt: c.Time}
		s.Nodes[c.Name] = n
	}
	n.NodeFacts = c.NodeFacts
	return n.clone(), nil
}

func (s *State) applyNodeSetPhase(c NodeSetPhase) (any, error) {
	n, ok := s.Nodes[c.Name]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q not found", c.Name)
	}
	if !validPhase(c.Phase) {
		return nil, ruleErr(ErrInvalid, "node %q: unknown phase %q", c.Name, c.Phase)
	}
	if n.Phase != c.Phase {
		n.PhaseSince = c.Time
	}
	n.Phase, n.PhaseReason = c.Phase, c.Reason
	return n.clone(), nil
}

// nodeIn returns the node if it is dedicated to namespace ns.
func (s *State) nodeIn(ns, name string) (*Node, error) {
	n, ok := s.Nodes[name]
	if !ok || n.Namespace != ns {
		return nil, ruleErr(ErrNotFound, "node %q not found in namespace %q", name, ns)
	}
	return n, nil
}

func (s *State) applyNodeTag(c NodeTag) (any, error) {
	if err := api.ValidateTag(c.Tag); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	n, err := s.nodeIn(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	if !n.HasTag(c.Tag) {
		n.Tags = append(n.Tags, c.Tag)
		slices.Sort(n.Tags)
	}
	return n.clone(), nil
}

func (s *State) applyNodeUntag(c NodeTag) (any, error) {
	if err := api.ValidateTag(c.Tag); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	n, err := s.nodeIn(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	n.Tags = slices.DeleteFunc(n.Tags, func(t string) bool { return t == c.Tag })
	return n.clone(), nil
}

func (s *State) applyNodeSetNamespace(c NodeSetNamespace) (any, error) {
	n, ok := s.Nodes[c.Name]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q not found", c.Name)
	}
	if _, ok := s.Namespaces[c.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", c.Namespace)
	}
	if n.Namespace != c.Namespace && len(s.ix().nodeVMs[n.Name]) > 0 {
		return nil, ruleErr(ErrConflict, "node %q still hosts VMs of namespace %q", n.Name, n.Namespace)
	}
	n.Namespace = c.Namespace
	return n.clone(), nil
}

// Nodes returns every node sorted by name, with usage.
func (f *FSM) Nodes() []NodeView {
	f.mu.RLock()
	defer f.mu.RUnlock()
	used := f.state.ix().used
	out := make([]NodeView, 0, len(f.state.Nodes))
	for _, n := range f.state.Nodes {
		out = append(out, NodeView{Node: *n.clone(), Used: used[n.Name]})
	}
	slices.SortFunc(out, func(a, b NodeView) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// EachNode calls fn with every node and its usage, in no order, under the
// replica's read lock: fn must not keep n or anything in it, nor call the
// FSM. It copies nothing (a placement over many nodes reads them all).
func (f *FSM) EachNode(fn func(n *Node, used Usage)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	used := f.state.ix().used
	for _, n := range f.state.Nodes {
		fn(n, used[n.Name])
	}
}

// IsNodeAddr reports whether a node of the cluster has address addr.
func (f *FSM) IsNodeAddr(addr string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, n := range f.state.Nodes {
		if n.Addr == addr {
			return true
		}
	}
	return false
}

// Node returns one node with usage.
func (f *FSM) Node(name string) (NodeView, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.state.Nodes[name]
	if !ok {
		return NodeView{}, false
	}
	return NodeView{Node: *n.clone(), Used: f.state.ix().used[name]}, true
}

// Ready reports whether the node is READY: its peer reports in and its
// hypervisor answers. Only a READY node takes VMs and jobs, and a job's
// part on a node that is not is lost.
func (n Node) Ready() bool { return n.Phase == api.PhaseReady }

// NodeReady reports whether node is in the cluster and READY; known is
// false for a node that left it (or never joined).
func (f *FSM) NodeReady(name string) (ready, known bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.state.Nodes[name]
	return ok && n.Ready(), ok
}

// PortsInUse returns the node ports held by the VMs on node.
func (f *FSM) PortsInUse(node string) map[int]bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.ix().portsOn(node)
}
