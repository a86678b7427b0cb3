package raftfsm

import "slices"

// SharedStorage is a namespace's shared VM storage: on each node, a folder
// that the namespace's VMs deployed with SharedStorage see, read-write, and
// that outlives them. It is a per-host cache, not cluster storage: each
// node has its own folder, and nothing is copied between nodes.
type SharedStorage struct {
	// MaxBytes bounds the folder on each node.
	MaxBytes int64 `json:"maxBytes"`
}

// Bounds of SharedStorage.MaxBytes.
const (
	MinSharedStorageBytes = 1 << 30
	MaxSharedStorageBytes = 16 << 40
)

// NamespaceSharedStorage turns a namespace's shared storage on (or changes
// its bound) with SharedStorage set, and off with nil: refused while a VM
// of the namespace uses it. Its nodes remove the folders of a namespace
// whose shared storage is off.
type NamespaceSharedStorage struct {
	Namespace     string         `json:"namespace"`
	SharedStorage *SharedStorage `json:"sharedStorage"`
}

func (s *State) applyNamespaceSharedStorage(c NamespaceSharedStorage) (any, error) {
	ns, ok := s.Namespaces[c.Namespace]
	if !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", c.Namespace)
	}
	if ss := c.SharedStorage; ss != nil {
		if ss.MaxBytes < MinSharedStorageBytes || ss.MaxBytes > MaxSharedStorageBytes {
			return nil, ruleErr(ErrInvalid, "shared storage of namespace %q: the bound per node must be between 1 GiB and 16 TiB, not %d bytes", c.Namespace, ss.MaxBytes)
		}
		v := *ss
		ns.SharedStorage = &v
		return ns.clone(), nil
	}
	var users []string
	for _, vm := range s.VMs {
		if vm.Namespace == c.Namespace && vm.SharedStorage {
			users = append(users, vm.Name)
		}
	}
	if len(users) > 0 {
		slices.Sort(users)
		return nil, ruleErr(ErrConflict, "namespace %q: its VMs %v use its shared storage: delete them first", c.Namespace, users)
	}
	ns.SharedStorage = nil
	return ns.clone(), nil
}

// checkSharedStorage refuses a VM that asks for its namespace's shared
// storage where the namespace has none, or on a node that does not offer
// it.
func (s *State) checkSharedStorage(vm *VM) error {
	if !vm.SharedStorage {
		return nil
	}
	if err := s.sharedStorageOn(vm.Namespace); err != nil {
		return err
	}
	if n, ok := s.Nodes[vm.Node]; ok && !n.SharedStorage {
		return ruleErr(ErrConflict, "node %q offers no shared storage: %s", vm.Node, n.SharedStorageWhy)
	}
	return nil
}

// sharedStorageOn refuses, with the quota's kind (403), a namespace whose
// shared storage is off.
func (s *State) sharedStorageOn(ns string) error {
	if n, ok := s.Namespaces[ns]; !ok || n.SharedStorage == nil {
		return ruleErr(ErrQuota, "namespace %q has no shared storage (an admin turns it on: svc namespace shared-storage %s)", ns, ns)
	}
	return nil
}

// SharedStorageOn returns nil when namespace ns's shared storage is on, or
// the rule error a deploy asking for it gets.
func (f *FSM) SharedStorageOn(ns string) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.sharedStorageOn(ns)
}

// MaxSharedUsageEntries bounds the namespaces of one usage report.
const MaxSharedUsageEntries = 4096

// NodeSharedUsage reports what the shared folder of each namespace takes
// on a node (proposed by the node's peer when it changed).
type NodeSharedUsage struct {
	Node  string           `json:"node"`
	Usage map[string]int64 `json:"usage"`
}

func (s *State) applyNodeSharedUsage(c NodeSharedUsage) (any, error) {
	n, ok := s.Nodes[c.Node]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q not found", c.Node)
	}
	if len(c.Usage) > MaxSharedUsageEntries {
		return nil, ruleErr(ErrInvalid, "node %q reports %d namespaces' shared storage, at most %d", c.Node, len(c.Usage), MaxSharedUsageEntries)
	}
	for ns, b := range c.Usage {
		if b < 0 {
			return nil, ruleErr(ErrInvalid, "node %q: namespace %q's shared storage cannot take %d bytes", c.Node, ns, b)
		}
	}
	n.SharedUsage = c.Usage
	if len(c.Usage) == 0 {
		n.SharedUsage = nil
	}
	return nil, nil
}

// SharedStorageNamespaces returns the namespaces whose shared storage is on,
// with their bound per node.
func (f *FSM) SharedStorageNamespaces() map[string]int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := map[string]int64{}
	for name, ns := range f.state.Namespaces {
		if ns.SharedStorage != nil {
			out[name] = ns.SharedStorage.MaxBytes
		}
	}
	return out
}

// SharedStorageUsers names the VMs on node of namespace ns that use its
// shared storage, sorted.
func (f *FSM) SharedStorageUsers(node, ns string) []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []string
	for _, vm := range f.state.ix().nodeVMs[node] {
		if vm.Namespace == ns && vm.SharedStorage {
			out = append(out, vm.Name)
		}
	}
	slices.Sort(out)
	return out
}
