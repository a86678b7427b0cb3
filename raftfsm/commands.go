package raftfsm

import (
	"fmt"
)

// A command type's entry: everything that differs by type, in one place.
// Adding a command is a Type constant and one line of the table below.
type command struct {
	// name is the type's name in logs, metrics and errors.
	name string
	// resource is the kind of record it changes (what watches of that
	// resource wake on; see also blindResources).
	resource Resource
	// peer, when set, allows a peer to propose the command on its own
	// behalf and says whether this body is that peer's to propose (see
	// FSM.CheckProposer); nil: only an authorized API call on the leader.
	peer ownerCheck
	// apply decodes the body and runs the command against the state, the
	// log entry's index given.
	apply func(s *State, index uint64, c Command) (any, error)
}

// commands is the table of every command type, by Type. It is never
// written after initialization.
var commands = [...]command{
	TypeInit:                   {name: "init", resource: ResourceInit, apply: indexed((*State).applyInit)},
	TypeNodeUpsert:             {name: "node-upsert", resource: ResourceNode, apply: plain((*State).applyNodeUpsert)},
	TypeNodeSetPhase:           {name: "node-set-phase", resource: ResourceNode, apply: plain((*State).applyNodeSetPhase)},
	TypeNodeTag:                {name: "node-tag", resource: ResourceNode, apply: plain((*State).applyNodeTag)},
	TypeNodeUntag:              {name: "node-untag", resource: ResourceNode, apply: plain((*State).applyNodeUntag)},
	TypeNodeSetNamespace:       {name: "node-set-namespace", resource: ResourceNode, apply: plain((*State).applyNodeSetNamespace)},
	TypeNamespaceCreate:        {name: "namespace-create", resource: ResourceNamespace, apply: plain((*State).applyNamespaceCreate)},
	TypeNamespaceDelete:        {name: "namespace-delete", resource: ResourceNamespace, apply: plain((*State).applyNamespaceDelete)},
	TypeVMCreate:               {name: "vm-create", resource: ResourceVM, apply: indexed((*State).applyVMCreate)},
	TypeVMAction:               {name: "vm-action", resource: ResourceVM, peer: ownVM, apply: plain((*State).applyVMAction)},
	TypeVMStatus:               {name: "vm-status", resource: ResourceVM, peer: ownNode, apply: plain((*State).applyVMStatus)},
	TypeVMDelete:               {name: "vm-delete", resource: ResourceVM, peer: unrunDeploy, apply: plain((*State).applyVMDelete)},
	TypeVMConfigCreate:         {name: "vmconfig-create", resource: ResourceVMConfig, apply: plain((*State).applyVMConfigCreate)},
	TypeVMConfigDelete:         {name: "vmconfig-delete", resource: ResourceVMConfig, apply: plain((*State).applyVMConfigDelete)},
	TypeImageCreate:            {name: "image-create", resource: ResourceImage, peer: ownImage, apply: plain((*State).applyImageCreate)},
	TypeBlobAddHolder:          {name: "blob-add-holder", resource: ResourceBlob, peer: ownNode, apply: plain((*State).applyBlobAddHolder)},
	TypeBlobDropHolder:         {name: "blob-drop-holder", resource: ResourceBlob, peer: ownNode, apply: plain((*State).applyBlobDropHolder)},
	TypeImageCopy:              {name: "image-copy", resource: ResourceImage, apply: plain((*State).applyImageCopy)},
	TypeImageDescribe:          {name: "image-describe", resource: ResourceImage, apply: plain((*State).applyImageDescribe)},
	TypeImageDelete:            {name: "image-delete", resource: ResourceImage, apply: plain((*State).applyImageDelete)},
	TypeVMImageOp:              {name: "vm-image-op", resource: ResourceVM, apply: indexed((*State).applyVMImageOp)},
	TypeVMImageOpDone:          {name: "vm-image-op-done", resource: ResourceVM, peer: ownNode, apply: plain((*State).applyVMImageOpDone)},
	TypeVMImageOpFailed:        {name: "vm-image-op-failed", resource: ResourceVM, peer: ownNode, apply: plain((*State).applyVMImageOpFailed)},
	TypeUserUpsert:             {name: "user-upsert", resource: ResourceUser, apply: indexed((*State).applyUserUpsert)},
	TypeUserRemove:             {name: "user-remove", resource: ResourceUser, apply: plain((*State).applyUserRemove)},
	TypeSACreate:               {name: "serviceaccount-create", resource: ResourceServiceAccount, apply: indexed((*State).applySACreate)},
	TypeSADelete:               {name: "serviceaccount-delete", resource: ResourceServiceAccount, apply: plain((*State).applySADelete)},
	TypeRoleBindingAdd:         {name: "rolebinding-add", resource: ResourceRoleBinding, apply: indexed((*State).applyRoleBindingAdd)},
	TypeRoleBindingDel:         {name: "rolebinding-remove", resource: ResourceRoleBinding, apply: plain((*State).applyRoleBindingDel)},
	TypeCertSet:                {name: "cert-set", resource: ResourceCert, apply: plain((*State).applyCertSet)},
	TypeSigningKeySet:          {name: "signing-key-set", resource: ResourceSigningKey, apply: plain((*State).applySigningKeySet)},
	TypeRegCredSet:             {name: "registry-credential-set", resource: ResourceRegistryCredential, apply: plain((*State).applyRegistryCredentialSet)},
	TypeRegCredDelete:          {name: "registry-credential-delete", resource: ResourceRegistryCredential, apply: plain((*State).applyRegistryCredentialDelete)},
	TypeJobCreate:              {name: "job-create", resource: ResourceJob, apply: indexed((*State).applyJobCreate)},
	TypeJobUpdate:              {name: "job-update", resource: ResourceJob, peer: ownJob, apply: plain((*State).applyJobUpdate)},
	TypeJobDelete:              {name: "job-delete", resource: ResourceJob, apply: plain((*State).applyJobDelete)},
	TypeCatalogSet:             {name: "catalog-set", resource: ResourceCatalog, apply: plain((*State).applyCatalogSet)},
	TypeNodeTemplates:          {name: "node-templates", resource: ResourceNode, peer: ownNode, apply: plain((*State).applyNodeTemplates)},
	TypeVMConfigSetWarm:        {name: "vmconfig-set-warm", resource: ResourceVMConfig, apply: plain((*State).applyVMConfigSetWarm)},
	TypeVMDiskSize:             {name: "vm-disk-size", resource: ResourceVM, peer: ownNode, apply: plain((*State).applyVMDiskSize)},
	TypeNodeCordon:             {name: "node-cordon", resource: ResourceNode, apply: plain((*State).applyNodeCordon)},
	TypeNamespaceQuota:         {name: "namespace-quota", resource: ResourceNamespace, apply: plain((*State).applyNamespaceQuotaSet)},
	TypeVMExtend:               {name: "vm-extend", resource: ResourceVM, apply: plain((*State).applyVMExtend)},
	TypeAuditAppend:            {name: "audit-append", resource: ResourceAudit, peer: ownAuditEntries, apply: plain((*State).applyAuditAppend)},
	TypeJoinTokenCreate:        {name: "jointoken-create", resource: ResourceJoinToken, apply: plain((*State).applyJoinTokenCreate)},
	TypeJoinTokenRevoke:        {name: "jointoken-revoke", resource: ResourceJoinToken, apply: plain((*State).applyJoinTokenRevoke)},
	TypePeerAdmit:              {name: "peer-admit", resource: ResourcePeer, peer: anyPeer, apply: indexed((*State).applyPeerAdmit)},
	TypeNodeRemove:             {name: "node-remove", resource: ResourceNode, apply: indexed((*State).applyNodeRemove)},
	TypePeerApprove:            {name: "peer-approve", resource: ResourcePeer, apply: indexed((*State).applyPeerApprove)},
	TypeNodeHot:                {name: "node-hot", resource: ResourceNode, peer: ownNode, apply: plain((*State).applyNodeHot)},
	TypeVMConfigSetHot:         {name: "vmconfig-set-hot", resource: ResourceVMConfig, apply: plain((*State).applyVMConfigSetHot)},
	TypePeerAddr:               {name: "peer-addr", resource: ResourcePeer, peer: ownName, apply: plain((*State).applyPeerAddr)},
	TypeGossipKeysSet:          {name: "gossip-keys-set", resource: ResourceGossipKeys, apply: plain((*State).applyGossipKeysSet)},
	TypeOIDCProviderSet:        {name: "oidc-provider-set", resource: ResourceOIDC, apply: plain((*State).applyOIDCProviderSet)},
	TypeOIDCProviderDel:        {name: "oidc-provider-delete", resource: ResourceOIDC, apply: plain((*State).applyOIDCProviderDelete)},
	TypeUserSignIn:             {name: "user-sign-in", resource: ResourceUser, apply: indexed((*State).applyUserSignIn)},
	TypeRunnerPoolSet:          {name: "runner-pool-set", resource: ResourceRunner, apply: plain((*State).applyRunnerPoolSet)},
	TypeRunnerPoolDelete:       {name: "runner-pool-delete", resource: ResourceRunner, apply: plain((*State).applyRunnerPoolDelete)},
	TypeRunnerJobUpdate:        {name: "runner-job-update", resource: ResourceRunner, apply: plain((*State).applyRunnerJobUpdate)},
	TypeRunnerJobRan:           {name: "runner-job-ran", resource: ResourceRunner, apply: plain((*State).applyRunnerJobRan)},
	TypeNamespaceSharedStorage: {name: "namespace-shared-storage", resource: ResourceNamespace, apply: plain((*State).applyNamespaceSharedStorage)},
	TypeNodeSharedUsage:        {name: "node-shared-usage", resource: ResourceNode, peer: ownNode, apply: plain((*State).applyNodeSharedUsage)},
}

// plain adapts a State method that takes the decoded body.
func plain[T any](f func(*State, T) (any, error)) func(*State, uint64, Command) (any, error) {
	return indexed(func(s *State, _ uint64, v T) (any, error) { return f(s, v) })
}

// indexed adapts a State method that also takes the entry's index (it
// names what the command creates).
func indexed[T any](f func(*State, uint64, T) (any, error)) func(*State, uint64, Command) (any, error) {
	return func(s *State, index uint64, c Command) (any, error) {
		v, err := decodeBody[T](c)
		if err != nil {
			return nil, err
		}
		return f(s, index, v)
	}
}

// entry returns t's table entry (ok false for a type this version does not
// know).
func (t Type) entry() (command, bool) {
	i := int(t &^ FlagIgnorable)
	if i >= len(commands) || commands[i].apply == nil {
		return command{}, false
	}
	return commands[i], true
}

func (t Type) String() string {
	if e, ok := t.entry(); ok {
		return e.name
	}
	return fmt.Sprintf("type-%d", byte(t&^FlagIgnorable))
}

// Known reports whether this version of the FSM knows the type.
func (t Type) Known() bool {
	_, ok := t.entry()
	return ok
}

// Resource returns the kind of record a command of type t changes.
func (t Type) Resource() Resource {
	e, _ := t.entry()
	return e.resource
}

// PeerProposable reports whether a peer may propose a command of this type
// through the leader on its own behalf (see FSM.CheckProposer, which binds
// each to the proposing peer): status reports, the blobs it holds (taken
// and dropped), images and ISOs it received, the outcome of a commit or
// save it carried out, the progress of its jobs, the stop and start of a
// VM whose disk its push job reads, the audit entries of requests it
// received, its own addresses, and the admission of a host that presented
// it a join token. Every other command comes from an authorized API call
// on the leader; the users root on a host names (svc admin token) go
// through a route of their own, audited as that host's.
func (t Type) PeerProposable() bool {
	e, _ := t.entry()
	return e.peer != nil
}

// apply runs one decoded command, the log entry at index, against s. A
// decoding error of the body is returned wrapped in ErrBadBody (the caller
// decides whether that is fatal); a broken rule is returned as a rule error
// and leaves s unchanged. The index names what a command creates (a user's
// or service account's UID): the same on every replica, never reused.
func (s *State) apply(index uint64, c Command) (any, error) {
	if s.idx == nil { // a state made without NewState: derive it before the command changes anything
		s.idx = buildIndex(s)
	}
	e, ok := c.Type.entry()
	if !ok {
		return nil, ErrUnknownCommand
	}
	return e.apply(s, index, c)
}
