package raftfsm

import (
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// Namespace isolates VMs, configs, images and nodes.
type Namespace struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	// Quota, when set, bounds what the namespace's VMs take together.
	Quota *Quota `json:"quota,omitempty"`
	// SharedStorage, when set, gives the namespace's VMs that ask for it a
	// folder shared on each node.
	SharedStorage *SharedStorage `json:"sharedStorage,omitempty"`
}

func (ns *Namespace) sortKey() string { return ns.Name }

func (ns *Namespace) clone() *Namespace {
	c := *ns
	if ns.Quota != nil {
		q := *ns.Quota
		c.Quota = &q
	}
	if ns.SharedStorage != nil {
		ss := *ns.SharedStorage
		c.SharedStorage = &ss
	}
	return &c
}

// NamespaceCreate creates a namespace.
type NamespaceCreate struct {
	Name string    `json:"name"`
	Time time.Time `json:"time"`
}

// NamespaceDelete deletes an empty namespace.
type NamespaceDelete struct {
	Name string `json:"name"`
}

func (s *State) applyNamespaceCreate(c NamespaceCreate) (any, error) {
	if err := api.ValidateName("namespace", c.Name, api.MaxNameLen); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	if _, ok := s.Namespaces[c.Name]; ok {
		return nil, ruleErr(ErrAlreadyExists, "namespace %q already exists", c.Name)
	}
	ns := &Namespace{Name: c.Name, CreatedAt: c.Time}
	s.Namespaces[c.Name] = ns
	cp := *ns
	return &cp, nil
}

func (s *State) applyNamespaceDelete(c NamespaceDelete) (any, error) {
	if _, ok := s.Namespaces[c.Name]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", c.Name)
	}
	if c.Name == api.DefaultNamespace {
		return nil, ruleErr(ErrConflict, "namespace %q cannot be deleted", c.Name)
	}
	if s.ix().nsVMs[c.Name] > 0 {
		return nil, ruleErr(ErrConflict, "namespace %q still has VMs", c.Name)
	}
	for _, n := range s.Nodes {
		if n.Namespace == c.Name {
			return nil, ruleErr(ErrConflict, "namespace %q still has nodes", c.Name)
		}
	}
	delete(s.Namespaces, c.Name)
	delete(s.RoleBindings, c.Name)
	for k, v := range s.VMConfigs {
		if v.Namespace == c.Name {
			delete(s.VMConfigs, k)
		}
	}
	for k, v := range s.ServiceAccounts {
		if v.Namespace == c.Name {
			delete(s.ServiceAccounts, k)
		}
	}
	for _, rb := range s.RoleBindings {
		rb.ServiceAccounts = slices.DeleteFunc(rb.ServiceAccounts, func(ref string) bool { return strings.HasPrefix(ref, c.Name+":") })
	}
	for k, v := range s.Images {
		if v.Namespace == c.Name {
			delete(s.Images, k)
			s.ix().dropImage(v)
		}
	}
	for k, v := range s.ISOs {
		if v.Namespace == c.Name {
			delete(s.ISOs, k)
			s.ix().dropDigest(v.Digest)
		}
	}
	return nil, nil
}

func namespaces(s *State) map[string]*Namespace { return s.Namespaces }

// Namespace returns one namespace.
func (f *FSM) Namespace(name string) (Namespace, bool) { return get(f, namespaces, name) }

// Namespaces returns every namespace sorted by name.
func (f *FSM) Namespaces() []Namespace { return list(f, namespaces, nil) }
