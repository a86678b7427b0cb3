package raftfsm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// A Topic names the part of the state a waiter watches (Watch, WaitOn), so
// that a change elsewhere does not wake it: a job's progress report wakes
// no host's reconciler, a VM's change wakes its own node's only.
type Topic struct {
	scope, key string
}

// Resource is the kind of record a command changes (its entry in the
// command table says which).
type Resource string

// The resources commands change.
const (
	ResourceVM       Resource = "vm"
	ResourceJob      Resource = "job"
	ResourceImage    Resource = "image"
	ResourceBlob     Resource = "blob"
	ResourceNode     Resource = "node"
	ResourceVMConfig Resource = "vmconfig"
	// ResourceRunner is runner pools and their jobs.
	ResourceRunner             Resource = "runner"
	ResourceInit               Resource = "init"
	ResourceNamespace          Resource = "namespace"
	ResourceUser               Resource = "user"
	ResourceServiceAccount     Resource = "serviceaccount"
	ResourceRoleBinding        Resource = "rolebinding"
	ResourceCert               Resource = "cert"
	ResourceSigningKey         Resource = "signing"
	ResourceRegistryCredential Resource = "registry"
	ResourceCatalog            Resource = "catalog"
	ResourceAudit              Resource = "audit"
	ResourceJoinToken          Resource = "jointoken"
	// ResourcePeer is a peer's admission and addresses.
	ResourcePeer       Resource = "peer"
	ResourceGossipKeys Resource = "gossip"
	ResourceOIDC       Resource = "oidc"
)

// NodeTopic is a change of any VM placed on node (created, changed, moved
// off it or deleted).
func NodeTopic(node string) Topic { return Topic{"node", node} }

// VMTopic is a change of one VM, its creation and its deletion.
func VMTopic(ns, name string) Topic { return Topic{"vm", key(ns, name)} }

// ResourceTopic is a change of any record of a resource.
func ResourceTopic(r Resource) Topic { return Topic{"resource", string(r)} }

// waiters are the channels of Watch, by topic.
type waiters struct {
	mu sync.Mutex
	ch map[Topic]chan struct{}
}

func (w *waiters) channel(t Topic) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = map[Topic]chan struct{}{}
	}
	ch, ok := w.ch[t]
	if !ok {
		ch = make(chan struct{})
		w.ch[t] = ch
	}
	return ch
}

// wake closes the channels of topics (of every topic, with all).
func (w *waiters) wake(all bool, topics ...Topic) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for t, ch := range w.ch {
		if all {
			close(ch)
			delete(w.ch, t)
		}
	}
	for _, t := range topics {
		if ch, ok := w.ch[t]; ok {
			close(ch)
			delete(w.ch, t)
		}
	}
}

// Watch returns a channel that is closed at the next applied change of t
// (or a restore of the whole state, which may change anything).
func (f *FSM) Watch(t Topic) <-chan struct{} { return f.topics.channel(t) }

// WaitOn waits until cond holds, testing it again at each change of t, or
// until ctx ends.
func (f *FSM) WaitOn(ctx context.Context, t Topic, cond func() bool) error {
	return wait(ctx, func() <-chan struct{} { return f.Watch(t) }, cond)
}

// wait tests cond, and again each time the channel changed returns (taken
// before each test, so no change is missed) is closed, until cond holds or
// ctx ends.
func wait(ctx context.Context, changed func() <-chan struct{}, cond func() bool) error {
	for {
		ch := changed()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for the replica: %w", ctx.Err())
		}
	}
}

// topicsOf returns the topics an applied command c changed: its resource, and
// for a command about a VM the VM and the nodes it was and is placed on;
// the caller holds the lock, before names the VM's node before c.
func (s *State) topicsOf(c Command, ns, name, before string) []Topic {
	ts := []Topic{ResourceTopic(c.Type.Resource())}
	if c.Type == TypeVMImageOpDone {
		// a commit or save's result: an image's content and its blob
		ts = append(ts, ResourceTopic(ResourceImage), ResourceTopic(ResourceBlob))
	}
	if name == "" {
		return ts
	}
	ts = append(ts, VMTopic(ns, name))
	if before != "" {
		ts = append(ts, NodeTopic(before))
	}
	if after := s.vmNode(ns, name); after != "" && after != before {
		ts = append(ts, NodeTopic(after))
	}
	return ts
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

// VMWatcher is a replica one can wait on for a VM (*FSM is one).
type VMWatcher interface {
	VM(ns, name string) (VM, bool)
	WaitOn(ctx context.Context, t Topic, cond func() bool) error
}

// WaitVM watches namespace ns's VM name on r until done says it is where
// it should be, or returns an error, which WaitVM returns. A VM deleted
// meanwhile, or replaced by another of its name when uid is not 0, is
// ErrNotFound; ctx ending first is ErrTimeout. Both are rule errors that
// say which VM, and the timeout what it last was.
func WaitVM(ctx context.Context, r VMWatcher, ns, name string, uid uint64, done func(VM) (bool, error)) (VM, error) {
	var vm VM
	var stop error
	err := r.WaitOn(ctx, VMTopic(ns, name), func() bool {
		var ok bool
		if vm, ok = r.VM(ns, name); !ok || uid != 0 && vm.UID != uid {
			stop = NewRuleError(ErrNotFound, fmt.Sprintf("vm %q was deleted", name))
			return true
		}
		ok, stop = done(vm)
		return ok || stop != nil
	})
	switch {
	case stop != nil:
		return vm, stop
	case err != nil:
		return vm, NewRuleError(ErrTimeout, fmt.Sprintf("vm %q is %s, not there yet after waiting: %v", name, vm.Status, ctx.Err()))
	}
	return vm, nil
}
