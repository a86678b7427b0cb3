package raftfsm

import (
	"maps"
)

// index is derived from the state, so that what Apply checks and what the
// views read costs the same with a hundred thousand VMs as with a thousand:
// per node its VMs, what they take and the ports they hold; per namespace how
// many VMs it has; per blob digest how many records reference it. Apply keeps
// it current and Restore rebuilds it; it is never part of a snapshot
// (availability is derived, never stored).
type index struct {
	nodeVMs map[string]map[string]*VM // node -> "ns/name" -> VM
	used    map[string]Usage          // node -> what its VMs take
	ports   map[string]map[int]bool   // node -> ports its VMs hold
	nsVMs   map[string]int            // namespace -> VMs
	digests map[string]int            // digest -> images, ISOs and VMs that reference it
	// readable counts, per namespace and digest, the images and ISOs of
	// the namespace with that content ("ns\x00digest").
	readable map[string]int
}

// buildIndex derives the index of s.
func buildIndex(s *State) *index {
	x := &index{
		nodeVMs: map[string]map[string]*VM{}, used: map[string]Usage{}, ports: map[string]map[int]bool{},
		nsVMs: map[string]int{}, digests: map[string]int{}, readable: map[string]int{},
	}
	for k, vm := range s.VMs {
		x.addVM(k, vm)
	}
	for _, img := range s.Images {
		x.addImage(img)
	}
	for _, iso := range s.ISOs {
		x.addImage(iso)
	}
	return x
}

// ix returns the state's index. NewState and Restore make it; readers never
// do (they hold only the read lock).
func (s *State) ix() *index { return s.idx }

func (x *index) addVM(k string, vm *VM) {
	if x.nodeVMs[vm.Node] == nil {
		x.nodeVMs[vm.Node] = map[string]*VM{}
		x.ports[vm.Node] = map[int]bool{}
	}
	x.nodeVMs[vm.Node][k] = vm
	u := x.used[vm.Node]
	u.CPU += vm.CPU
	u.MemoryBytes += vm.MemoryBytes
	u.GPU += vm.GPU
	x.used[vm.Node] = u
	for _, p := range vm.Ports() {
		x.ports[vm.Node][p] = true
	}
	x.nsVMs[vm.Namespace]++
	x.addDigest(vm.ImageDigest)
	x.addDigest(vm.ISODigest)
	x.addDigest(vm.NVRAMDigest)
}

func (x *index) removeVM(k string, vm *VM) {
	delete(x.nodeVMs[vm.Node], k)
	u := x.used[vm.Node]
	u.CPU -= vm.CPU
	u.MemoryBytes -= vm.MemoryBytes
	u.GPU -= vm.GPU
	x.used[vm.Node] = u
	for _, p := range vm.Ports() {
		delete(x.ports[vm.Node], p)
	}
	x.nsVMs[vm.Namespace]--
	x.dropDigest(vm.ImageDigest)
	x.dropDigest(vm.ISODigest)
	x.dropDigest(vm.NVRAMDigest)
}

// addImage counts an image's (or ISO's) references: its disk and its NVRAM.
func (x *index) addImage(img *Image) {
	for _, d := range []string{img.Digest, img.NVRAMDigest} {
		if d != "" {
			x.addDigest(d)
			x.readable[img.Namespace+"\x00"+d]++
		}
	}
}

func (x *index) dropImage(img *Image) {
	for _, d := range []string{img.Digest, img.NVRAMDigest} {
		if d == "" {
			continue
		}
		x.dropDigest(d)
		k := img.Namespace + "\x00" + d
		if x.readable[k]--; x.readable[k] <= 0 {
			delete(x.readable, k)
		}
	}
}

// holds reports whether an image or ISO of ns has the content digest.
func (x *index) holds(ns, digest string) bool {
	return digest != "" && x.readable[ns+"\x00"+digest] > 0
}

// addDigest counts a reference to a blob ("" is no blob: an image whose
// save has not finished).
func (x *index) addDigest(d string) {
	if d != "" {
		x.digests[d]++
	}
}

func (x *index) dropDigest(d string) {
	if d == "" {
		return
	}
	if x.digests[d]--; x.digests[d] <= 0 {
		delete(x.digests, d)
	}
}

// portsOn returns a copy of the ports the VMs on node hold.
func (x *index) portsOn(node string) map[int]bool {
	if m := x.ports[node]; m != nil {
		return maps.Clone(m)
	}
	return map[int]bool{}
}
