package raftfsm

import (
	"encoding/json"
	"time"
)

// auditSkew bounds how far from the leader's clock the time of an audit
// entry a peer proposes may be: entries wait at most a few seconds in a
// peer's buffer, and a peer cut off from the leader drops what it cannot
// send.
const auditSkew = 10 * time.Minute

// CheckProposer says whether peer may propose a command of type t with
// this body on its own behalf (t.PeerProposable). A command that names a
// node must name peer itself: a peer reports its own VMs, blobs, images,
// templates and addresses, and the audit entries of requests it received;
// a peer admits a host only with that host's join token, which Apply
// checks. The error is a rule error of kind ErrInvalid.
func (f *FSM) CheckProposer(peer string, t Type, body []byte, now time.Time) error {
	e, _ := t.entry()
	if e.peer == nil {
		return ruleErr(ErrInvalid, "a peer may not propose %s", t)
	}
	b := proposed{t: t, peer: peer, raw: body, now: now}
	if err := json.Unmarshal(body, &b); err != nil {
		return ruleErr(ErrInvalid, "%s: %v", t, err)
	}
	return e.peer(f, b)
}

// proposed is a body a peer proposes, with what the owner checks read of it.
type proposed struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	Holder    string `json:"holder"`
	Target    string `json:"target"`

	t    Type
	peer string // the proposing peer
	raw  []byte
	now  time.Time
}

// own refuses the body unless node is the proposing peer.
func (b proposed) own(node string) error {
	if node != b.peer {
		return ruleErr(ErrInvalid, "peer %q may not propose %s for node %q", b.peer, b.t, node)
	}
	return nil
}

// An ownerCheck says whether the proposing peer may propose this body: a
// command about a node is that node's peer's alone.
type ownerCheck func(f *FSM, b proposed) error

func ownNode(_ *FSM, b proposed) error { return b.own(b.Node) }

// ownImage: an image a peer records is one it holds, with the proof of why
// its namespace may have the content (ImageCreate.Proof), which Apply
// checks.
func ownImage(_ *FSM, b proposed) error {
	var c ImageCreate
	if err := json.Unmarshal(b.raw, &c); err != nil {
		return ruleErr(ErrInvalid, "%s: %v", b.t, err)
	}
	if c.Proof == "" {
		return ruleErr(ErrInvalid, "peer %q may not propose %s without a proof", b.peer, b.t)
	}
	return b.own(c.Holder)
}
func ownName(_ *FSM, b proposed) error { return b.own(b.Name) }

// anyPeer: a host's admission comes through the peer it presented its join
// token to; Apply checks the token.
func anyPeer(*FSM, proposed) error { return nil }

// ownVM: the stop and start of a VM come from its node's peer.
func ownVM(f *FSM, b proposed) error {
	vm, ok := f.VM(b.Namespace, b.Name)
	if !ok {
		return ruleErr(ErrNotFound, "vm %q not found in namespace %q", b.Name, b.Namespace)
	}
	return b.own(vm.Node)
}

// unrunDeploy: a peer that waited on a deploy for its caller removes the
// VM the deploy placed when it failed or did not run in time: only that VM
// (its UID) and only while it has not run (Apply checks DeployBy).
func unrunDeploy(_ *FSM, b proposed) error {
	var d VMDelete
	if err := json.Unmarshal(b.raw, &d); err != nil {
		return ruleErr(ErrInvalid, "%s: %v", b.t, err)
	}
	if !d.Unrun || d.UID == 0 {
		return ruleErr(ErrInvalid, "a peer may propose %s only for a deploy's VM that has not run (unrun, with its uid)", b.t)
	}
	return nil
}

// ownJob: a job's progress comes from the peer it targets, else from the
// peer it runs on.
func ownJob(f *FSM, b proposed) error {
	if b.Target != "" {
		return b.own(b.Target)
	}
	j, ok := f.Job(b.Namespace, b.Name)
	if !ok {
		return ruleErr(ErrNotFound, "job %q not found in namespace %q", b.Name, b.Namespace)
	}
	return b.own(j.Node)
}

// ownAuditEntries: every entry is the proposing peer's, dated near the
// leader's clock.
func ownAuditEntries(_ *FSM, b proposed) error {
	var a AuditAppend
	if err := json.Unmarshal(b.raw, &a); err != nil {
		return ruleErr(ErrInvalid, "%s: %v", b.t, err)
	}
	for _, e := range a.Entries {
		if err := b.own(e.Peer); err != nil {
			return err
		}
		if e.Time.Before(b.now.Add(-auditSkew)) || e.Time.After(b.now.Add(auditSkew)) {
			return ruleErr(ErrInvalid, "peer %q may not propose an audit entry dated %s", b.peer, e.Time.UTC().Format(time.RFC3339))
		}
	}
	return nil
}
