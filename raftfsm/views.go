package raftfsm

import (
	"maps"
	"slices"
	"strings"
)

// VMs returns the VMs of a namespace ("" for every namespace), sorted.
func (f *FSM) VMs(ns string) []VM {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []VM
	for _, vm := range f.state.VMs {
		if ns == "" || vm.Namespace == ns {
			out = append(out, *vm.clone())
		}
	}
	slices.SortFunc(out, func(a, b VM) int { return strings.Compare(key(a.Namespace, a.Name), key(b.Namespace, b.Name)) })
	return out
}

// VMsOnNode returns the VMs placed on a node, sorted.
func (f *FSM) VMsOnNode(node string) []VM {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []VM
	for _, vm := range f.state.VMs {
		if vm.Node == node {
			out = append(out, *vm.clone())
		}
	}
	slices.SortFunc(out, func(a, b VM) int { return strings.Compare(key(a.Namespace, a.Name), key(b.Namespace, b.Name)) })
	return out
}

// VM returns one VM.
func (f *FSM) VM(ns, name string) (VM, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	vm, ok := f.state.VMs[key(ns, name)]
	if !ok {
		return VM{}, false
	}
	return *vm.clone(), true
}

// VMConfigs returns the VM configs of a namespace, sorted.
func (f *FSM) VMConfigs(ns string) []VMConfig {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []VMConfig
	for _, c := range f.state.VMConfigs {
		if c.Namespace == ns {
			out = append(out, *c.clone())
		}
	}
	slices.SortFunc(out, func(a, b VMConfig) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// VMConfig returns one VM config.
func (f *FSM) VMConfig(ns, name string) (VMConfig, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	c, ok := f.state.VMConfigs[key(ns, name)]
	if !ok {
		return VMConfig{}, false
	}
	return *c.clone(), true
}

// Images returns the images of a namespace, sorted.
func (f *FSM) Images(ns string) []Image {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Image
	for _, img := range f.state.Images {
		if img.Namespace == ns {
			out = append(out, *img)
		}
	}
	slices.SortFunc(out, func(a, b Image) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Image returns one image.
func (f *FSM) Image(ns, name string) (Image, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	img, ok := f.state.Images[key(ns, name)]
	if !ok {
		return Image{}, false
	}
	return *img, true
}

// Blob returns what the cluster knows of a blob.
func (f *FSM) Blob(digest string) (Blob, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	b, ok := f.state.Blobs[digest]
	if !ok {
		return Blob{}, false
	}
	c := *b
	c.Holders = slices.Clone(b.Holders)
	return c, true
}

// PortsInUse returns the node ports held by the VMs on node.
func (f *FSM) PortsInUse(node string) map[int]bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return maps.Clone(f.state.portsInUse(node))
}
