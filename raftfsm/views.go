package raftfsm

import (
	"slices"
	"strings"
)

// record is a kind of record the state holds in a map: the views return
// copies of records, sorted by their keys, so that readers never share
// memory with the state.
type record[T any] interface {
	*T
	clone() *T
	sortKey() string
}

func (vm *VM) sortKey() string             { return key(vm.Namespace, vm.Name) }
func (c *VMConfig) sortKey() string        { return key(c.Namespace, c.Name) }
func (img *Image) sortKey() string         { return key(img.Namespace, img.Name) }
func (sa *ServiceAccount) sortKey() string { return key(sa.Namespace, sa.Name) }
func (ns *Namespace) sortKey() string      { return ns.Name }
func (b *Blob) sortKey() string            { return b.Digest }
func (u *User) sortKey() string            { return u.Name }

func (img *Image) clone() *Image { c := *img; return &c }
func (sa *ServiceAccount) clone() *ServiceAccount {
	c := *sa
	return &c
}
func (ns *Namespace) clone() *Namespace { c := *ns; return &c }
func (b *Blob) clone() *Blob {
	c := *b
	c.Holders = slices.Clone(b.Holders)
	return &c
}
func (u *User) clone() *User { c := *u; return &c }

// list returns copies of the records of one map of the state that keep
// accepts (all when keep is nil), sorted by key, under the read lock.
func list[T any, P record[T]](f *FSM, records func(*State) map[string]*T, keep func(P) bool) []T {
	f.mu.RLock()
	defer f.mu.RUnlock()
	var out []T
	for _, r := range records(f.state) {
		if keep == nil || keep(r) {
			out = append(out, *P(r).clone())
		}
	}
	slices.SortFunc(out, func(a, b T) int { return strings.Compare(P(&a).sortKey(), P(&b).sortKey()) })
	return out
}

// get returns a copy of one record.
func get[T any, P record[T]](f *FSM, records func(*State) map[string]*T, k string) (T, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	r, ok := records(f.state)[k]
	if !ok {
		var zero T
		return zero, false
	}
	return *P(r).clone(), true
}

func vms(s *State) map[string]*VM                         { return s.VMs }
func vmConfigs(s *State) map[string]*VMConfig             { return s.VMConfigs }
func images(s *State) map[string]*Image                   { return s.Images }
func isos(s *State) map[string]*Image                     { return s.ISOs }
func blobs(s *State) map[string]*Blob                     { return s.Blobs }
func users(s *State) map[string]*User                     { return s.Users }
func serviceAccounts(s *State) map[string]*ServiceAccount { return s.ServiceAccounts }
func namespaces(s *State) map[string]*Namespace           { return s.Namespaces }

// VMs returns the VMs of a namespace ("" for every namespace), sorted.
func (f *FSM) VMs(ns string) []VM {
	return list(f, vms, func(vm *VM) bool { return ns == "" || vm.Namespace == ns })
}

// VMsOnNode returns the VMs placed on a node, sorted.
func (f *FSM) VMsOnNode(node string) []VM {
	return list(f, func(s *State) map[string]*VM { return s.ix().nodeVMs[node] }, nil)
}

// VM returns one VM.
func (f *FSM) VM(ns, name string) (VM, bool) { return get(f, vms, key(ns, name)) }

// VMConfigs returns the VM configs of a namespace, sorted.
func (f *FSM) VMConfigs(ns string) []VMConfig {
	return list(f, vmConfigs, func(c *VMConfig) bool { return c.Namespace == ns })
}

// VMConfig returns one VM config.
func (f *FSM) VMConfig(ns, name string) (VMConfig, bool) { return get(f, vmConfigs, key(ns, name)) }

// Images returns the images of a namespace, sorted.
func (f *FSM) Images(ns string) []Image {
	return list(f, images, func(img *Image) bool { return img.Namespace == ns })
}

// Image returns one image.
func (f *FSM) Image(ns, name string) (Image, bool) { return get(f, images, key(ns, name)) }

// ISOs returns the ISOs of a namespace, sorted.
func (f *FSM) ISOs(ns string) []Image {
	return list(f, isos, func(img *Image) bool { return img.Namespace == ns })
}

// ISO returns one ISO.
func (f *FSM) ISO(ns, name string) (Image, bool) { return get(f, isos, key(ns, name)) }

// Blob returns what the cluster knows of a blob.
func (f *FSM) Blob(digest string) (Blob, bool) { return get(f, blobs, digest) }

// BlobInUse reports whether an image, an ISO or a VM of any namespace
// references the blob: such a blob must stay on the peers that hold it.
func (f *FSM) BlobInUse(digest string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.blobInUse(digest)
}

// BlobsHeldBy returns the blobs the state says node holds.
func (f *FSM) BlobsHeldBy(node string) []Blob {
	return list(f, blobs, func(b *Blob) bool { return slices.Contains(b.Holders, node) })
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
func (f *FSM) User(name string) (User, bool) { return get(f, users, name) }

// ServiceAccount returns one service account.
func (f *FSM) ServiceAccount(ns, name string) (ServiceAccount, bool) {
	return get(f, serviceAccounts, key(ns, name))
}

// ServiceAccounts returns the service accounts of a namespace, sorted.
func (f *FSM) ServiceAccounts(ns string) []ServiceAccount {
	return list(f, serviceAccounts, func(sa *ServiceAccount) bool { return sa.Namespace == ns })
}

// Namespace returns one namespace.
func (f *FSM) Namespace(name string) (Namespace, bool) { return get(f, namespaces, name) }

// Namespaces returns every namespace sorted by name.
func (f *FSM) Namespaces() []Namespace { return list(f, namespaces, nil) }

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

// NameTaken returns the kind (image or iso) of what holds a name in a
// namespace, or "" when nothing does: images and ISOs share their names.
func (f *FSM) NameTaken(ns, name string) string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.nameTaken(ns, name)
}
