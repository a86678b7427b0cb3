package raftfsm

import (
	"encoding/json"
	"sync"
)

// nodeWaiters are the channels of NodeChanged, by node.
type nodeWaiters struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

// NodeChanged returns a channel that is closed at the next change of a VM
// placed on node (or a restore of the whole state).
func (f *FSM) NodeChanged(node string) <-chan struct{} {
	f.nodes.mu.Lock()
	defer f.nodes.mu.Unlock()
	if f.nodes.ch == nil {
		f.nodes.ch = map[string]chan struct{}{}
	}
	ch, ok := f.nodes.ch[node]
	if !ok {
		ch = make(chan struct{})
		f.nodes.ch[node] = ch
	}
	return ch
}

// wake closes the NodeChanged channels of nodes (all of them for none).
func (w *nodeWaiters) wake(all bool, nodes ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n, ch := range w.ch {
		if all {
			close(ch)
			delete(w.ch, n)
		}
	}
	for _, n := range nodes {
		if ch, ok := w.ch[n]; ok && n != "" {
			close(ch)
			delete(w.ch, n)
		}
	}
}

// vmOf names the VM a command is about ("" for a command about none).
func vmOf(c Command) (ns, name string) {
	switch c.Type {
	case TypeVMAction, TypeVMStatus, TypeVMDelete:
		var b struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
		}
		_ = json.Unmarshal(c.Body, &b)
		return b.Namespace, b.Name
	case TypeVMCreate:
		var b VMCreate
		_ = json.Unmarshal(c.Body, &b)
		return b.VM.Namespace, b.VM.Name
	case TypeVMImageOp, TypeVMImageOpDone, TypeVMImageOpFailed:
		var b struct {
			Namespace string `json:"namespace"`
			VM        string `json:"vm"`
		}
		_ = json.Unmarshal(c.Body, &b)
		return b.Namespace, b.VM
	}
	return "", ""
}

// vmNode is the node of a VM ("" for none); the caller holds the lock.
func (s *State) vmNode(ns, name string) string {
	if vm, ok := s.VMs[key(ns, name)]; ok {
		return vm.Node
	}
	return ""
}
