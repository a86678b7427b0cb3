package raftfsm

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Type identifies a command. The top bit is FlagIgnorable.
type Type byte

// FlagIgnorable marks a command that a peer which does not know its type may
// skip without diverging from the others.
const FlagIgnorable Type = 0x80

// Command types. Values are part of the log format: never renumber.
const (
	TypeInit             Type = 1
	TypeNodeUpsert       Type = 2
	TypeNodeSetPhase     Type = 3
	TypeNodeTag          Type = 4
	TypeNodeUntag        Type = 5
	TypeNodeSetNamespace Type = 6
	TypeNamespaceCreate  Type = 7
	TypeNamespaceDelete  Type = 8
	TypeVMCreate         Type = 9
	TypeVMAction         Type = 10
	TypeVMStatus         Type = 11
	TypeVMDelete         Type = 12
	TypeVMConfigCreate   Type = 13
	TypeVMConfigDelete   Type = 14
	TypeImageCreate      Type = 15
	TypeBlobAddHolder    Type = 16
	TypeUserUpsert       Type = 17
	TypeUserRemove       Type = 18
	TypeSACreate         Type = 19
	TypeSADelete         Type = 20
	TypeRoleBindingAdd   Type = 21
	TypeRoleBindingDel   Type = 22
	TypeCertSet          Type = 23
	TypeSigningKeySet    Type = 24
	TypeBlobDropHolder   Type = 25
	TypeImageCopy        Type = 26
	TypeImageDescribe    Type = 27
	TypeImageDelete      Type = 28
	TypeVMImageOp        Type = 29
	TypeVMImageOpDone    Type = 30
	TypeVMImageOpFailed  Type = 31
	TypeRegCredSet       Type = 32
	TypeRegCredDelete    Type = 33
	TypeJobCreate        Type = 34
	TypeJobUpdate        Type = 35
	TypeJobDelete        Type = 36
	TypeCatalogSet       Type = 37
	TypeNodeTemplates    Type = 38
	TypeVMConfigSetWarm  Type = 39
	TypeVMDiskSize       Type = 40
	TypeNodeCordon       Type = 41
	TypeNamespaceQuota   Type = 42
	TypeVMExtend         Type = 43
	TypeAuditAppend      Type = 44
	TypeJoinTokenCreate  Type = 45
	TypeJoinTokenRevoke  Type = 46
	TypePeerAdmit        Type = 47
	TypeNodeRemove       Type = 48
	TypePeerAddr         Type = 49
	TypeGossipKeysSet    Type = 50
	TypeOIDCProviderSet  Type = 51
	TypeOIDCProviderDel  Type = 52
	TypeUserSignIn       Type = 53
	TypeRunnerPoolSet    Type = 54
	TypeRunnerPoolDelete Type = 55
	TypeRunnerJobUpdate  Type = 56
	TypeRunnerJobRan     Type = 57
	// TypeNamespaceSharedStorage turns a namespace's shared storage on or off.
	TypeNamespaceSharedStorage Type = 58
	// TypeNodeSharedUsage reports what each namespace's shared folder takes on a node.
	TypeNodeSharedUsage Type = 59
	// TypePeerApprove approves a peer admitted pending: it may then have
	// the cluster secret and a vote.
	TypePeerApprove Type = 60
	// TypeNodeHot reports a node's free hot guests.
	TypeNodeHot Type = 61
	// TypeVMConfigSetHot sets a VM config's hot count.
	TypeVMConfigSetHot Type = 62
)

// Codec errors.
var (
	ErrEmptyCommand   = errors.New("empty command")
	ErrUnknownCommand = errors.New("unknown command type")
	ErrBadBody        = errors.New("malformed command body")
	// ErrTooLarge is wrapped when a command is over MaxCommandBytes.
	ErrTooLarge = errors.New("command too large")
)

// MaxCommandBytes bounds an encoded command. Raft replicates entries in
// batches beside its heartbeats; a quarter of a mebibyte keeps every batch
// quick to send and apply (the largest bodies the API accepts, such as an
// add-subject call of MaxSubjectsPerCall names, fit well within it).
const MaxCommandBytes = 256 << 10

// Command is a decoded log entry.
type Command struct {
	Type Type
	Body json.RawMessage
}

// Encode returns the log bytes of a command: the type byte, then the JSON body.
func Encode(t Type, body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", t, err)
	}
	if len(b)+1 > MaxCommandBytes {
		return nil, fmt.Errorf("%s of %d bytes: %w (at most %d)", t, len(b)+1, ErrTooLarge, MaxCommandBytes)
	}
	return append([]byte{byte(t)}, b...), nil
}

// Decode splits log bytes into a command. It checks the framing and the type,
// not the body, which Apply decodes into the type's struct.
func Decode(b []byte) (Command, error) {
	if len(b) == 0 {
		return Command{}, ErrEmptyCommand
	}
	t := Type(b[0])
	if !t.Known() {
		return Command{Type: t}, fmt.Errorf("%w %d", ErrUnknownCommand, b[0]&^byte(FlagIgnorable))
	}
	body := b[1:]
	if !json.Valid(body) {
		return Command{Type: t}, fmt.Errorf("%s: %w", t, ErrBadBody)
	}
	return Command{Type: t, Body: json.RawMessage(body)}, nil
}

func decodeBody[T any](c Command) (T, error) {
	var v T
	if err := json.Unmarshal(c.Body, &v); err != nil {
		return v, fmt.Errorf("%s: %w: %v", c.Type, ErrBadBody, err)
	}
	return v, nil
}
