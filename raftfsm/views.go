package raftfsm

import (
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
	for _, vm := range f.state.ix().nodeVMs[node] {
		out = append(out, *vm.clone())
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

// BlobInUse reports whether an image, an ISO or a VM of any namespace
// references the blob: such a blob must stay on the peers that hold it.
func (f *FSM) BlobInUse(digest string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.blobInUse(digest)
}

// BlobsHeldBy returns the blobs the state says node holds.
func (f *FSM) BlobsHeldBy(node string) []Blob {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []Blob
	for _, b := range f.state.Blobs {
		if slices.Contains(b.Holders, node) {
			c := *b
			c.Holders = slices.Clone(b.Holders)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Blob) int { return strings.Compare(a.Digest, b.Digest) })
	return out
}

// PortsInUse returns the node ports held by the VMs on node.
func (f *FSM) PortsInUse(node string) map[int]bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.ix().portsOn(node)
}

// SigningKey returns the cluster's token key seed (nil before Init).
func (f *FSM) SigningKey() []byte {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return slices.Clone(f.state.SigningKey)
}

// User returns one user.
func (f *FSM) User(name string) (User, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	u, ok := f.state.Users[name]
	if !ok {
		return User{}, false
	}
	return *u, true
}

// ServiceAccount returns one service account.
func (f *FSM) ServiceAccount(ns, name string) (ServiceAccount, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	sa, ok := f.state.ServiceAccounts[key(ns, name)]
	if !ok {
		return ServiceAccount{}, false
	}
	return *sa, true
}

// ServiceAccounts returns the service accounts of a namespace, sorted.
func (f *FSM) ServiceAccounts(ns string) []ServiceAccount {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []ServiceAccount
	for _, sa := range f.state.ServiceAccounts {
		if sa.Namespace == ns {
			out = append(out, *sa)
		}
	}
	slices.SortFunc(out, func(a, b ServiceAccount) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// RoleBinding returns the subjects bound to a namespace (empty lists when none).
func (f *FSM) RoleBinding(ns string) RoleBinding {
	f.mu.RLock()
	defer f.mu.RUnlock()
	rb, ok := f.state.RoleBindings[ns]
	if !ok {
		return RoleBinding{Namespace: ns, Users: []string{}, ServiceAccounts: []string{}}
	}
	return *rb.clone()
}

// Cert returns the cluster's HTTPS certificate, if one was uploaded.
func (f *FSM) Cert() (Cert, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.state.Cert == nil {
		return Cert{}, false
	}
	return *f.state.Cert, true
}
