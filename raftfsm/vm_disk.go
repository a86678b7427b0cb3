package raftfsm

// VMDiskSize records a VM's disk's new size, from its host after a resize.
type VMDiskSize struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	// UID is the VM's (VM.UID): a later VM of the same name is not changed.
	UID       uint64 `json:"uid"`
	DiskBytes int64  `json:"diskBytes"`
	// Undo sets back the size a resize recorded before it failed on the
	// host (the one way a recorded size goes down).
	Undo bool `json:"undo,omitempty"`
}

func (s *State) applyVMDiskSize(c VMDiskSize) (any, error) {
	vm, err := s.vm(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	if vm.Node != c.Node || vm.UID != c.UID {
		return nil, ruleErr(ErrConflict, "vm %q (%d) on %s is not the one %s resized", c.Name, vm.UID, vm.Node, c.Node)
	}
	switch {
	case c.Undo && (c.DiskBytes > vm.DiskBytes || c.DiskBytes < vm.BaseDiskBytes):
		return nil, ruleErr(ErrInvalid, "a resize of vm %q is undone to a size between its image's and its own", c.Name)
	case !c.Undo && c.DiskBytes < vm.DiskBytes:
		return nil, ruleErr(ErrInvalid, "a disk of %d bytes is smaller than the VM's (%d bytes)", c.DiskBytes, vm.DiskBytes)
	}
	if !c.Undo {
		if err := s.checkDiskQuota(vm, c.DiskBytes); err != nil {
			return nil, err
		}
	}
	vm.DiskBytes = c.DiskBytes
	return vm.clone(), nil
}
