package raftfsm

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// Booted templates: a node keeps, for each warm VM config whose image it
// holds, a guest of the config's shape booted and saved; a VM of that shape
// placed there starts from a copy instead of booting. Nodes build and drop
// templates on their own; the replicated state records which are ready
// where (Node.Templates), for placement and for the configs' warmNodes.

// MaxTemplatesPerNode bounds the templates a node reports.
const MaxTemplatesPerNode = 32

// How a VM started (VM.StartedFrom).
const (
	StartedFromTemplate = "template"
	StartedFromBoot     = "boot"
)

// Shape is what a booted template has in common with the VMs it starts:
// the image's content, CPU, memory and devices.
type Shape struct {
	ImageDigest string `json:"imageDigest"`
	ImageFormat string `json:"imageFormat,omitempty"`
	CPU         int    `json:"cpu"`
	MemoryBytes int64  `json:"memoryBytes"`
	LegacyIO    bool   `json:"legacyIO,omitempty"`
	OS          string `json:"os,omitempty"`
}

// Key names the shape: the same on every peer.
func (s Shape) Key() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s|%s|%d|%d|%t|%s", s.ImageDigest, s.ImageFormat, s.CPU, s.MemoryBytes, s.LegacyIO, s.OS))
	return hex.EncodeToString(h[:8])
}

// Shape is the VM's template shape; false for a VM no template starts: one
// with an installer ISO, a GPU, a macOS NVRAM of its own or its
// namespace's shared folder (a device the template's saved memory lacks).
func (vm *VM) Shape() (Shape, bool) {
	if vm.ISODigest != "" || vm.GPU > 0 || vm.NVRAMDigest != "" || vm.ImageDigest == "" || vm.SharedStorage {
		return Shape{}, false
	}
	return Shape{ImageDigest: vm.ImageDigest, ImageFormat: vm.ImageFormat, CPU: vm.CPU, MemoryBytes: vm.MemoryBytes, LegacyIO: vm.LegacyIO, OS: vm.OS}, true
}

// WarmShape is the shape of the VMs a warm config deploys, given its image
// (the same defaults as a deploy); an error says why the config cannot be
// warm.
func (c *VMConfig) WarmShape(img Image) (Shape, error) {
	switch {
	case c.ISO != "":
		return Shape{}, fmt.Errorf("a config with an ISO installs a guest; only a config that boots its image can be warm")
	case c.GPUPassthrough:
		return Shape{}, fmt.Errorf("a config with GPU passthrough cannot be warm (a GPU's state is not saved)")
	case c.SharedStorage:
		return Shape{}, fmt.Errorf("a config with shared storage cannot be warm (its VMs get the namespace's shared folder, a device a template's saved memory lacks: they boot)")
	case !img.Usable():
		return Shape{}, fmt.Errorf("image %q is not Ready (%s)", img.Name, img.State)
	case img.NVRAMDigest != "":
		return Shape{}, fmt.Errorf("image %q carries an NVRAM (a macOS image): its VMs boot", img.Name)
	}
	mem := c.MemoryGiB
	if mem == 0 {
		mem = api.DefaultMemoryGiB
	}
	cpu := c.CPU
	if cpu <= 0 {
		cpu = api.DefaultCPU
	}
	return Shape{ImageDigest: img.Digest, ImageFormat: img.Format, CPU: cpu, MemoryBytes: int64(mem * (1 << 30)), LegacyIO: c.LegacyIO, OS: img.OS}, nil
}

// Template is a booted template a node holds, ready to start VMs.
type Template struct {
	Key       string    `json:"key"`
	Shape     Shape     `json:"shape"`
	SizeBytes int64     `json:"sizeBytes"`
	ReadyAt   time.Time `json:"readyAt"`
}

// NodeTemplates replaces the set of templates a node reports ready.
type NodeTemplates struct {
	Node      string     `json:"node"`
	Templates []Template `json:"templates"`
}

// VMConfigSetWarm turns a config's booted templates on or off.
type VMConfigSetWarm struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Warm      bool   `json:"warm"`
}

func (s *State) applyNodeTemplates(c NodeTemplates) (any, error) {
	n, ok := s.Nodes[c.Node]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q not found", c.Node)
	}
	if len(c.Templates) > MaxTemplatesPerNode {
		return nil, ruleErr(ErrInvalid, "%d templates, at most %d", len(c.Templates), MaxTemplatesPerNode)
	}
	for _, t := range c.Templates {
		if t.Key != t.Shape.Key() {
			return nil, ruleErr(ErrInvalid, "template %q does not name its shape (%s)", t.Key, t.Shape.Key())
		}
	}
	n.Templates = slices.Clone(c.Templates)
	slices.SortFunc(n.Templates, func(a, b Template) int { return strings.Compare(a.Key, b.Key) })
	return nil, nil
}

func (s *State) applyVMConfigSetWarm(c VMConfigSetWarm) (any, error) {
	cfg, ok := s.VMConfigs[key(c.Namespace, c.Name)]
	if !ok {
		return nil, ruleErr(ErrNotFound, "vmconfig %q not found in namespace %q", c.Name, c.Namespace)
	}
	if c.Warm {
		if err := s.checkWarm(cfg); err != nil {
			return nil, err
		}
	}
	cfg.Warm = c.Warm
	if !c.Warm {
		cfg.Hot = 0 // a hot pool is filled from the template
	}
	return cfg.clone(), nil
}

// checkWarm refuses a warm config whose VMs no template can start.
func (s *State) checkWarm(cfg *VMConfig) error {
	img, ok := s.Images[key(cfg.Namespace, cfg.Image)]
	if !ok {
		return ruleErr(ErrInvalid, "vmconfig %q: warm needs an image of the namespace; %q is read from its registry at each deploy", cfg.Name, cfg.Image)
	}
	sh, err := cfg.WarmShape(*img)
	if err != nil {
		reason := ErrInvalid
		if !img.Usable() {
			reason = ErrConflict
		}
		return ruleErr(reason, "vmconfig %q cannot be warm: %s", cfg.Name, err.Error())
	}
	return s.checkHoldable(cfg, sh)
}

// checkHoldable refuses a warm shape no node could hold: none of the
// namespace's nodes (of the cluster's, while the namespace has none) has
// the CPUs, the memory and the hypervisor its template boots with.
func (s *State) checkHoldable(cfg *VMConfig, sh Shape) error {
	var own, all []*Node
	for _, n := range s.Nodes {
		all = append(all, n)
		if n.Namespace == cfg.Namespace {
			own = append(own, n)
		}
	}
	nodes := own
	if len(nodes) == 0 {
		nodes = all
	}
	var maxCPU int
	var maxMem int64
	for _, n := range nodes {
		if sh.OS == OSMacOS && n.Hypervisor != "vz" {
			continue
		}
		if n.Capacity.CPU >= sh.CPU && n.Capacity.MemoryBytes >= sh.MemoryBytes {
			return nil
		}
		maxCPU, maxMem = max(maxCPU, n.Capacity.CPU), max(maxMem, n.Capacity.MemoryBytes)
	}
	if len(nodes) == 0 {
		return nil // a cluster being formed: its first node is not reported yet
	}
	if sh.OS == OSMacOS && maxCPU == 0 {
		return ruleErr(ErrInvalid, "vmconfig %q cannot be warm: no node runs macOS guests (vz)", cfg.Name)
	}
	return ruleErr(ErrInvalid, "vmconfig %q cannot be warm: no node could hold its template (%d CPUs, %d GiB of memory); the largest offer %d CPUs and %d GiB",
		cfg.Name, sh.CPU, sh.MemoryBytes>>30, maxCPU, maxMem>>30)
}

// HasTemplate reports whether node n holds a ready template of key.
func (n *Node) HasTemplate(key string) bool {
	return slices.ContainsFunc(n.Templates, func(t Template) bool { return t.Key == key })
}

// WarmShape returns the shape of a warm config's VMs as the state is now;
// false when the config is not warm or its image cannot start templates.
func (f *FSM) WarmShape(cfg VMConfig) (Shape, bool) {
	if !cfg.Warm {
		return Shape{}, false
	}
	img, ok := f.Image(cfg.Namespace, cfg.Image)
	if !ok {
		return Shape{}, false
	}
	sh, err := cfg.WarmShape(img)
	return sh, err == nil
}

// WarmNodes names the nodes holding a ready template of key, sorted.
func (f *FSM) WarmNodes(key string) []string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := []string{}
	for name, n := range f.state.Nodes {
		if n.HasTemplate(key) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// WarmConfigs returns the warm VM configs of every namespace, sorted.
func (f *FSM) WarmConfigs() []VMConfig {
	return list(f, vmConfigs, func(c *VMConfig) bool { return c.Warm })
}
