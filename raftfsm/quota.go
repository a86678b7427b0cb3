package raftfsm

import "fmt"

// Quota bounds what a namespace's VMs may take together; a zero field
// sets no bound.
type Quota struct {
	CPU         int   `json:"cpu,omitempty"`
	MemoryBytes int64 `json:"memoryBytes,omitempty"`
	VMs         int   `json:"vms,omitempty"`
	// DiskBytes bounds the VMs' disks as their guests see them.
	DiskBytes int64 `json:"diskBytes,omitempty"`
}

// QuotaUse is what a namespace's VMs take, counted against its quota.
type QuotaUse struct {
	CPU         int   `json:"cpu"`
	MemoryBytes int64 `json:"memoryBytes"`
	VMs         int   `json:"vms"`
	DiskBytes   int64 `json:"diskBytes"`
	// PooledDiskBytes is what the free hot guests of the namespace's
	// nodes hold of disk (in DiskBytes too): they yield to VMs, so a
	// deploy's quota check leaves them out, and the pools shrink to stay
	// within the quota.
	PooledDiskBytes int64 `json:"pooledDiskBytes,omitempty"`
}

// NamespaceQuotaSet sets (or, with a nil Quota, removes) a namespace's quota.
type NamespaceQuotaSet struct {
	Namespace string `json:"namespace"`
	Quota     *Quota `json:"quota"`
}

func (s *State) applyNamespaceQuotaSet(c NamespaceQuotaSet) (any, error) {
	ns, ok := s.Namespaces[c.Namespace]
	if !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", c.Namespace)
	}
	if q := c.Quota; q != nil {
		if q.CPU < 0 || q.MemoryBytes < 0 || q.VMs < 0 || q.DiskBytes < 0 {
			return nil, ruleErr(ErrInvalid, "a quota is not negative")
		}
		if *q == (Quota{}) {
			c.Quota = nil
		}
	}
	if c.Quota == nil {
		ns.Quota = nil
	} else {
		q := *c.Quota
		ns.Quota = &q
	}
	return ns.clone(), nil
}

// add counts a VM in the use.
func (u *QuotaUse) add(vm *VM) {
	u.CPU += vm.CPU
	u.MemoryBytes += vm.MemoryBytes
	u.VMs++
	u.DiskBytes += vm.DiskBytes
}

// quotaUse adds up what the namespace's VMs take.
func (s *State) quotaUse(namespace string) QuotaUse {
	var u QuotaUse
	for _, vm := range s.VMs {
		if vm.Namespace == namespace {
			u.add(vm)
		}
	}
	return u
}

// checkQuota refuses a new VM that would take its namespace over its quota,
// naming the bound and what is in use. It runs in the VM's create, so
// racing deploys are counted one after another.
func (s *State) checkQuota(vm *VM) error {
	ns, ok := s.Namespaces[vm.Namespace]
	if !ok || ns.Quota == nil {
		return nil
	}
	q, u := ns.Quota, s.quotaUse(vm.Namespace)
	over := func(what string, used, add, limit any) error {
		return ruleErr(ErrQuota, "namespace %q is at its quota of %s: %v in use, %v asked, the quota is %v", vm.Namespace, what, used, add, limit)
	}
	switch {
	case q.VMs > 0 && u.VMs+1 > q.VMs:
		return over("VMs", u.VMs, 1, q.VMs)
	case q.CPU > 0 && u.CPU+vm.CPU > q.CPU:
		return over("CPU", u.CPU, vm.CPU, q.CPU)
	case q.MemoryBytes > 0 && u.MemoryBytes+vm.MemoryBytes > q.MemoryBytes:
		return over("memory", gib(u.MemoryBytes), gib(vm.MemoryBytes), gib(q.MemoryBytes))
	case q.DiskBytes > 0 && u.DiskBytes+vm.DiskBytes > q.DiskBytes:
		return over("disk", gib(u.DiskBytes), gib(vm.DiskBytes), gib(q.DiskBytes))
	}
	return nil
}

// checkDiskQuota refuses to grow a VM's disk from the size it has to bytes
// past its namespace's disk quota.
func (s *State) checkDiskQuota(vm *VM, bytes int64) error {
	ns, ok := s.Namespaces[vm.Namespace]
	if !ok || ns.Quota == nil || ns.Quota.DiskBytes == 0 || bytes <= vm.DiskBytes {
		return nil
	}
	u := s.quotaUse(vm.Namespace)
	if u.DiskBytes-vm.DiskBytes+bytes > ns.Quota.DiskBytes {
		return ruleErr(ErrQuota, "namespace %q is at its quota of disk: %v in use, %v more asked, the quota is %v",
			vm.Namespace, gib(u.DiskBytes), gib(bytes-vm.DiskBytes), gib(ns.Quota.DiskBytes))
	}
	return nil
}

func gib(b int64) string { return fmt.Sprintf("%gGi", float64(b)/(1<<30)) }

// QuotaUse adds up what the namespace's VMs take, as its quota counts it,
// and the disks of its nodes' free hot guests.
func (f *FSM) QuotaUse(namespace string) QuotaUse {
	var u QuotaUse
	for _, vm := range f.VMs(namespace) {
		u.add(&vm)
	}
	for _, n := range f.Nodes() {
		if n.Namespace != namespace {
			continue
		}
		for _, g := range n.Hot {
			u.PooledDiskBytes += g.DiskBytes
		}
	}
	u.DiskBytes += u.PooledDiskBytes
	return u
}
