package raftfsm

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
		return applyBody(c, func(b Init) (any, error) { return s.applyInit(index, b) })
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
		return applyBody(c, func(b JobCreate) (any, error) { return s.applyJobCreate(index, b) })
	case TypeJobUpdate:
		return applyBody(c, s.applyJobUpdate)
	case TypeJobDelete:
		return applyBody(c, s.applyJobDelete)
	case TypeCatalogSet:
		return applyBody(c, s.applyCatalogSet)
	case TypeNodeTemplates:
		return applyBody(c, s.applyNodeTemplates)
	case TypeVMConfigSetWarm:
		return applyBody(c, s.applyVMConfigSetWarm)
	case TypeVMDiskSize:
		return applyBody(c, s.applyVMDiskSize)
	case TypeNodeCordon:
		return applyBody(c, s.applyNodeCordon)
	case TypeNamespaceQuota:
		return applyBody(c, s.applyNamespaceQuotaSet)
	case TypeVMExtend:
		return applyBody(c, s.applyVMExtend)
	case TypeAuditAppend:
		return applyBody(c, s.applyAuditAppend)
	case TypeJoinTokenCreate:
		return applyBody(c, s.applyJoinTokenCreate)
	case TypeJoinTokenRevoke:
		return applyBody(c, s.applyJoinTokenRevoke)
	case TypePeerAdmit:
		return applyBody(c, func(b PeerAdmit) (any, error) { return s.applyPeerAdmit(index, b) })
	case TypeNodeRemove:
		return applyBody(c, func(b NodeRemove) (any, error) { return s.applyNodeRemove(index, b) })
	case TypePeerAddr:
		return applyBody(c, s.applyPeerAddr)
	case TypeGossipKeysSet:
		return applyBody(c, s.applyGossipKeysSet)
	case TypeOIDCProviderSet:
		return applyBody(c, s.applyOIDCProviderSet)
	case TypeOIDCProviderDel:
		return applyBody(c, s.applyOIDCProviderDelete)
	case TypeUserSignIn:
		return applyBody(c, func(b UserSignIn) (any, error) { return s.applyUserSignIn(index, b) })
	case TypeRunnerPoolSet:
		return applyBody(c, s.applyRunnerPoolSet)
	case TypeRunnerPoolDelete:
		return applyBody(c, s.applyRunnerPoolDelete)
	case TypeRunnerJobUpdate:
		return applyBody(c, s.applyRunnerJobUpdate)
	case TypeRunnerJobRan:
		return applyBody(c, s.applyRunnerJobRan)
	case TypeNamespaceSharedStorage:
		return applyBody(c, s.applyNamespaceSharedStorage)
	case TypeNodeSharedUsage:
		return applyBody(c, s.applyNodeSharedUsage)
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
