package raftfsm

import (
	"slices"
	"strings"

	"github.com/svc-project/svc/api"
)

// apply runs one decoded command, the log entry at index, against s. A
// decoding error of the body is returned wrapped in ErrBadBody (the caller
// decides whether that is fatal); a broken rule is returned as a rule error
// and leaves s unchanged. The index names what a command creates (a user's
// or service account's UID): the same on every replica, never reused.
func (s *State) apply(index uint64, c Command) (any, error) {
	if s.idx == nil { // a state made without NewState: derive it before the command changes anything
		s.idx = buildIndex(s)
	}
	switch c.Type &^ FlagIgnorable {
	case TypeInit:
		return applyBody(c, s.applyInit)
	case TypeNodeUpsert:
		return applyBody(c, s.applyNodeUpsert)
	case TypeNodeSetPhase:
		return applyBody(c, s.applyNodeSetPhase)
	case TypeNodeTag:
		return applyBody(c, s.applyNodeTag)
	case TypeNodeUntag:
		return applyBody(c, s.applyNodeUntag)
	case TypeNodeSetNamespace:
		return applyBody(c, s.applyNodeSetNamespace)
	case TypeNamespaceCreate:
		return applyBody(c, s.applyNamespaceCreate)
	case TypeNamespaceDelete:
		return applyBody(c, s.applyNamespaceDelete)
	case TypeVMCreate:
		return applyBody(c, func(b VMCreate) (any, error) { return s.applyVMCreate(index, b) })
	case TypeVMAction:
		return applyBody(c, s.applyVMAction)
	case TypeVMStatus:
		return applyBody(c, s.applyVMStatus)
	case TypeVMDelete:
		return applyBody(c, s.applyVMDelete)
	case TypeVMConfigCreate:
		return applyBody(c, s.applyVMConfigCreate)
	case TypeVMConfigDelete:
		return applyBody(c, s.applyVMConfigDelete)
	case TypeImageCreate:
		return applyBody(c, s.applyImageCreate)
	case TypeBlobAddHolder:
		return applyBody(c, s.applyBlobAddHolder)
	case TypeBlobDropHolder:
		return applyBody(c, s.applyBlobDropHolder)
	case TypeImageCopy:
		return applyBody(c, s.applyImageCopy)
	case TypeImageDescribe:
		return applyBody(c, s.applyImageDescribe)
	case TypeImageDelete:
		return applyBody(c, s.applyImageDelete)
	case TypeVMImageOp:
		return applyBody(c, func(b VMImageOp) (any, error) { return s.applyVMImageOp(index, b) })
	case TypeVMImageOpDone:
		return applyBody(c, s.applyVMImageOpDone)
	case TypeVMImageOpFailed:
		return applyBody(c, s.applyVMImageOpFailed)
	case TypeUserUpsert:
		return applyBody(c, func(b UserUpsert) (any, error) { return s.applyUserUpsert(index, b) })
	case TypeUserRemove:
		return applyBody(c, s.applyUserRemove)
	case TypeSACreate:
		return applyBody(c, func(b SACreate) (any, error) { return s.applySACreate(index, b) })
	case TypeSADelete:
		return applyBody(c, s.applySADelete)
	case TypeRoleBindingAdd:
		return applyBody(c, func(b RoleBindingChange) (any, error) { return s.applyRoleBindingAdd(index, b) })
	case TypeRoleBindingDel:
		return applyBody(c, s.applyRoleBindingDel)
	case TypeCertSet:
		return applyBody(c, s.applyCertSet)
	case TypeSigningKeySet:
		return applyBody(c, s.applySigningKeySet)
	case TypeRegCredSet:
		return applyBody(c, s.applyRegistryCredentialSet)
	case TypeRegCredDelete:
		return applyBody(c, s.applyRegistryCredentialDelete)
	case TypeJobCreate:
		return applyBody(c, s.applyJobCreate)
	case TypeJobUpdate:
		return applyBody(c, s.applyJobUpdate)
	case TypeJobDelete:
		return applyBody(c, s.applyJobDelete)
	case TypeCatalogSet:
		return applyBody(c, s.applyCatalogSet)
	}
	return nil, ErrUnknownCommand
}

func applyBody[T any](c Command, f func(T) (any, error)) (any, error) {
	v, err := decodeBody[T](c)
	if err != nil {
		return nil, err
	}
	return f(v)
}

func (s *State) applyInit(c Init) (any, error) {
	if s.Initialized {
		return nil, ruleErr(ErrAlreadyExists, "cluster %s is already initialised", s.ClusterID)
	}
	if c.ClusterID == "" {
		return nil, ruleErr(ErrInvalid, "cluster id must not be empty")
	}
	if len(c.SigningKey) != 0 && len(c.SigningKey) != 32 {
		return nil, ruleErr(ErrInvalid, "signing key must be a 32-byte Ed25519 seed")
	}
	s.Initialized = true
	s.ClusterID = c.ClusterID
	s.CreatedAt = c.Time
	if len(c.SigningKey) == 32 {
		s.SigningKey = append([]byte(nil), c.SigningKey...)
	}
	if _, ok := s.Namespaces[api.DefaultNamespace]; !ok {
		s.Namespaces[api.DefaultNamespace] = &Namespace{Name: api.DefaultNamespace, CreatedAt: c.Time}
	}
	return nil, nil
}

func validPhase(p string) bool { return p == api.PhaseReady || p == api.PhaseNotReady }

func (s *State) applyNodeUpsert(c NodeUpsert) (any, error) {
	if c.Name == "" {
		return nil, ruleErr(ErrInvalid, "node name must not be empty")
	}
	if c.Capacity.CPU < 0 || c.Capacity.MemoryBytes < 0 || c.Capacity.GPU < 0 {
		return nil, ruleErr(ErrInvalid, "node %q: capacity must not be negative", c.Name)
	}
	n, ok := s.Nodes[c.Name]
	if !ok {
		phase := c.Phase
		if phase == "" {
			phase = api.PhaseNotReady
		}
		if !validPhase(phase) {
			return nil, ruleErr(ErrInvalid, "node %q: unknown phase %q", c.Name, phase)
		}
		n = &Node{Name: c.Name, Namespace: api.DefaultNamespace, Tags: []string{}, Phase: phase, PhaseSince: c.Time, JoinedAt: c.Time}
		s.Nodes[c.Name] = n
	}
	n.NodeFacts = c.NodeFacts
	return n.clone(), nil
}

func (s *State) applyNodeSetPhase(c NodeSetPhase) (any, error) {
	n, ok := s.Nodes[c.Name]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q not found", c.Name)
	}
	if !validPhase(c.Phase) {
		return nil, ruleErr(ErrInvalid, "node %q: unknown phase %q", c.Name, c.Phase)
	}
	if n.Phase != c.Phase {
		n.PhaseSince = c.Time
	}
	n.Phase, n.PhaseReason = c.Phase, c.Reason
	return n.clone(), nil
}

// nodeIn returns the node if it is dedicated to namespace ns.
func (s *State) nodeIn(ns, name string) (*Node, error) {
	n, ok := s.Nodes[name]
	if !ok || n.Namespace != ns {
		return nil, ruleErr(ErrNotFound, "node %q not found in namespace %q", name, ns)
	}
	return n, nil
}

func (s *State) applyNodeTag(c NodeTag) (any, error) {
	if err := api.ValidateTag(c.Tag); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	n, err := s.nodeIn(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	if !n.HasTag(c.Tag) {
		n.Tags = append(n.Tags, c.Tag)
		slices.Sort(n.Tags)
	}
	return n.clone(), nil
}

func (s *State) applyNodeUntag(c NodeTag) (any, error) {
	if err := api.ValidateTag(c.Tag); err != nil {
		return nil, ruleErr(ErrInvalid, "%s", err.Error())
	}
	n, err := s.nodeIn(c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	n.Tags = slices.DeleteFunc(n.Tags, func(t string) bool { return t == c.Tag })
	return n.clone(), nil
}

func (s *State) applyNodeSetNamespace(c NodeSetNamespace) (any, error) {
	n, ok := s.Nodes[c.Name]
	if !ok {
		return nil, ruleErr(ErrNotFound, "node %q not found", c.Name)
	}
	if _, ok := s.Namespaces[c.Namespace]; !ok {
		return nil, ruleErr(ErrNotFound, "namespace %q not found", c.Namespace)
	}
	if n.Namespace != c.Namespace && len(s.ix().nodeVMs[n.Name]) > 0 {
		return nil, ruleErr(ErrConflict, "node %q still hosts VMs of namespace %q", n.Name, n.Namespace)
	}
	n.Namespace = c.Namespace
	return n.clone(), nil
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
			s.ix().dropDigest(v.Digest)
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
