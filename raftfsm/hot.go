package raftfsm

import (
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// Hot pools: a node keeps, for each warm VM config with a hot count, that
// many guests of the config's shape restored from its template and running,
// each already made its own (machine id, SSH host keys, random seed), owned
// by no namespace and reachable by no one. The node reports its free ones
// (Node.Hot); the VMCreate that places a VM of such a shape on the node
// claims one in the same Apply (VM.Domain), so two deploys never get one
// guest, and the node hands it to the VM: its name, ports and screen.

// Hot pool bounds.
const (
	// MaxHotPerConfig bounds a config's hot count.
	MaxHotPerConfig = api.MaxHot
	// MaxHotPerNode bounds the free hot guests a node reports.
	MaxHotPerNode = 32
	// hotSpentKept is how many claimed guests' domains a node remembers,
	// so that a report made before a claim cannot offer the guest again.
	hotSpentKept = 256
	// maxDiskBytes bounds a hot guest's disk as reported: the largest disk
	// svc takes (64 TiB).
	maxDiskBytes = 64 << 40
)

// StartedFromHot says the VM's guest was a node's hot guest.
const StartedFromHot = "hot"

// HotGuest is a free guest of a node's hot pool.
type HotGuest struct {
	// Key is the guest's shape (Shape.Key).
	Key string `json:"key"`
	// Domain is the guest's domain on the node: a name under the node's
	// hot prefix (HotDomainPrefix), never used twice.
	Domain  string    `json:"domain"`
	ReadyAt time.Time `json:"readyAt"`
	// DiskBytes is the size of the guest's disk as it sees it (its
	// image's): the node holds room for it, and it counts in the use of
	// the node's namespace (QuotaUse.PooledDiskBytes).
	DiskBytes int64 `json:"diskBytes,omitempty"`
}

// NodeHot replaces the set of free hot guests a node reports.
type NodeHot struct {
	Node   string     `json:"node"`
	Guests []HotGuest `json:"guests"`
}

// HotDomainPrefix starts the domain of every hot guest of node: the
// node's domain prefix and a "namespace" no namespace can be ('_' is not
// in names), as the hypervisor package names them.
func HotDomainPrefix(node string) string { return "svc." + node + "._hot." }

// VMConfigSetHot sets a config's hot count.
type VMConfigSetHot struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Hot       int    `json:"hot"`
}

func (s *State) applyVMConfigSetHot(c VMConfigSetHot) (any, error) {
	cfg, ok := s.VMConfigs[key(c.Namespace, c.Name)]
	if !ok {
		return nil, ruleErr(ErrNotFound, "vmconfig %q not found in namespace %q", c.Name, c.Namespace)
	}
	next := *cfg
	next.Hot = c.Hot
	if err := checkHot(&next); err != nil {
		return nil, err
	}
	cfg.Hot = c.Hot
	return cfg.clone(), nil
}

// checkHot refuses a hot count out of bounds, or on a config that keeps no
// template to fill its pool from.
func checkHot(cfg *VMConfig) error {
	switch {
	case cfg.Hot < 0 || cfg.Hot > MaxHotPerConfig:
		return ruleErr(ErrInvalid, "vmconfig %q: hot is 0 to %d guests per node, not %d", cfg.Name, MaxHotPerConfig, cfg.Hot)
	case cfg.Hot > 0 && !cfg.Warm:
		return ruleErr(ErrInvalid, "vmconfig %q: a hot pool is filled from the config's booted template: make it warm too (--warm)", cfg.Name)
	}
	return nil
}

func (s *State) applyNodeHot(c NodeHot) (any, error) {
	n, ok := s.Nodes[c.Node]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q not found", c.Node)
	}
	if len(c.Guests) > MaxHotPerNode {
		return nil, ruleErr(ErrInvalid, "%d hot guests, at most %d", len(c.Guests), MaxHotPerNode)
	}
	prefix := HotDomainPrefix(c.Node)
	seen := map[string]bool{}
	guests := make([]HotGuest, 0, len(c.Guests))
	for _, g := range c.Guests {
		if !strings.HasPrefix(g.Domain, prefix) || len(g.Domain) > 200 || seen[g.Domain] || len(g.Key) != 16 || g.DiskBytes < 0 || g.DiskBytes > maxDiskBytes {
			return nil, ruleErr(ErrInvalid, "hot guest %q of shape %q: not a hot domain of node %s", g.Domain, g.Key, c.Node)
		}
		seen[g.Domain] = true
		// A report made before a claim was applied still lists the guest:
		// it is not free any more.
		if slices.Contains(n.HotSpent, g.Domain) {
			continue
		}
		guests = append(guests, g)
	}
	slices.SortFunc(guests, func(a, b HotGuest) int { return strings.Compare(a.Domain, b.Domain) })
	n.Hot = guests
	return nil, nil
}

// claimHot gives the new VM vm a free hot guest of its shape on its node
// n, if n has one: the VM's domain is the guest's, and the guest is no
// longer free (nor ever again: its domain is spent).
func claimHot(n *Node, vm *VM) {
	vm.Domain = "" // only a claim names it
	if len(n.Hot) == 0 {
		return
	}
	sh, ok := vm.Shape()
	if !ok {
		return
	}
	k := sh.Key()
	i := slices.IndexFunc(n.Hot, func(g HotGuest) bool { return g.Key == k })
	if i < 0 {
		return
	}
	vm.Domain = n.Hot[i].Domain
	n.Hot = slices.Delete(slices.Clone(n.Hot), i, i+1)
	n.HotSpent = append(n.HotSpent, vm.Domain)
	if len(n.HotSpent) > hotSpentKept {
		n.HotSpent = slices.Clone(n.HotSpent[len(n.HotSpent)-hotSpentKept:])
	}
}

// HotFree counts node's free hot guests of shape key.
func (n *Node) HotFree(key string) int {
	c := 0
	for _, g := range n.Hot {
		if g.Key == key {
			c++
		}
	}
	return c
}

// HotNodes counts, by node, the free hot guests of shape key.
func (f *FSM) HotNodes(key string) map[string]int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := map[string]int{}
	for name, n := range f.state.Nodes {
		if c := n.HotFree(key); c > 0 || n.HasTemplate(key) {
			out[name] = c
		}
	}
	return out
}

// HotConfigs returns the VM configs of every namespace with a hot pool,
// sorted.
func (f *FSM) HotConfigs() []VMConfig {
	return list(f, vmConfigs, func(c *VMConfig) bool { return c.Warm && c.Hot > 0 })
}
