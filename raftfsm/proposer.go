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
	if !t.PeerProposable() {
		return ruleErr(ErrInvalid, "a peer may not propose %s", t)
	}
	var b struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
		VM        string `json:"vm"`
		Node      string `json:"node"`
		Holder    string `json:"holder"`
		Target    string `json:"target"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return ruleErr(ErrInvalid, "%s: %v", t, err)
	}
	own := func(node string) error {
		if node != peer {
			return ruleErr(ErrInvalid, "peer %q may not propose %s for node %q", peer, t, node)
		}
		return nil
	}
	switch t {
	case TypeVMStatus, TypeVMDiskSize, TypeVMImageOpDone, TypeVMImageOpFailed, TypeBlobAddHolder, TypeBlobDropHolder, TypeNodeTemplates, TypeNodeSharedUsage:
		return own(b.Node)
	case TypeImageCreate:
		return own(b.Holder)
	case TypePeerAddr:
		return own(b.Name)
	case TypeVMAction:
		vm, ok := f.VM(b.Namespace, b.Name)
		if !ok {
			return ruleErr(ErrNotFound, "vm %q not found in namespace %q", b.Name, b.Namespace)
		}
		return own(vm.Node)
	case TypeJobUpdate:
		if b.Target != "" {
			return own(b.Target)
		}
		j, ok := f.Job(b.Namespace, b.Name)
		if !ok {
			return ruleErr(ErrNotFound, "job %q not found in namespace %q", b.Name, b.Namespace)
		}
		return own(j.Node)
	case TypeAuditAppend:
		var a AuditAppend
		if err := json.Unmarshal(body, &a); err != nil {
			return ruleErr(ErrInvalid, "%s: %v", t, err)
		}
		for _, e := range a.Entries {
			if err := own(e.Peer); err != nil {
				return err
			}
			if e.Time.Before(now.Add(-auditSkew)) || e.Time.After(now.Add(auditSkew)) {
				return ruleErr(ErrInvalid, "peer %q may not propose an audit entry dated %s", peer, e.Time.UTC().Format(time.RFC3339))
			}
		}
		return nil
	case TypePeerAdmit:
		return nil
	}
	return ruleErr(ErrInvalid, "a peer may not propose %s", t)
}
