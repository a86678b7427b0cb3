package raftfsm

import (
	"errors"
	"fmt"

	"github.com/svc-project/svc/api"
)

// Kinds of rule errors returned by Apply. Compare with errors.Is.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
	ErrConflict      = errors.New("conflict")
	// ErrInvalid is the API's own (api.ErrInvalid): a value refused by a
	// rule here or by the API's validation is one kind, answered 400.
	ErrInvalid = api.ErrInvalid
	// ErrTooMany is wrapped when a namespace is at a limit of open work
	// (jobs): it may try again once some of it has ended.
	ErrTooMany = errors.New("too many")
	// ErrQuota is wrapped when a namespace's quota refuses what is asked.
	ErrQuota = errors.New("over quota")
	// ErrNotLeader is wrapped when a write reached a peer that is not (or no
	// longer) the leader, or the cluster has no leader.
	ErrNotLeader = errors.New("not the leader")
	// ErrTimeout is wrapped when a write was not committed before its deadline;
	// it may still be applied later.
	ErrTimeout = errors.New("timed out")
)

// RuleError is a rule broken by a command: its message is meant for the API
// caller, and it unwraps to one of the kinds above (ErrNotFound, ...).
type RuleError struct {
	kind error
	msg  string
}

func (e *RuleError) Error() string { return e.msg }

func (e *RuleError) Unwrap() error { return e.kind }

// Refusal reports whether the command is known not to have been applied:
// the state refused it. A timeout or a lost leadership is no refusal: the
// write may still be applied.
func (e *RuleError) Refusal() bool { return e.kind != ErrTimeout && e.kind != ErrNotLeader }

func ruleErr(kind error, format string, args ...any) error {
	return &RuleError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// NewRuleError returns a rule error of the given kind with msg as its whole
// message, e.g. to carry a rule broken on the leader back to a peer.
func NewRuleError(kind error, msg string) error { return &RuleError{kind: kind, msg: msg} }
