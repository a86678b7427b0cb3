package raftfsm

import (
	"time"

	"github.com/svc-project/svc/api"
)

// The audit log: every API write as the peer that received it saw it
// (who, from where, what, the outcome, when), kept in the replicated state
// and bounded (the oldest entries go). It never holds a request's body or
// headers: no token, password or other secret reaches it.

// AuditEntry is one API write (the API's record: who, from where, what,
// the outcome, when).
type AuditEntry = api.AuditEntry

// Bounds of the audit log.
const (
	// MaxAuditBatch bounds the entries one AuditAppend carries.
	MaxAuditBatch = 1000
	// MinAuditKeep and MaxAuditKeep bound how many entries the log keeps.
	MinAuditKeep = 100
	MaxAuditKeep = 1_000_000
	// maxAuditField bounds each text field of an entry.
	maxAuditField = 512
	// MaxAnonymousAudit bounds the entries of calls that carried no valid
	// token: they are kept apart, so that a flood of them never evicts the
	// record of what users did (AuditAnonymousSeen counts them all).
	MaxAnonymousAudit = 1000
)

// AuditAppend adds entries to the audit log, which then keeps the last
// Keep of them (the proposing peer's --audit-entries; within the bounds).
type AuditAppend struct {
	Entries []AuditEntry `json:"entries"`
	Keep    int          `json:"keep"`
}

func (s *State) applyAuditAppend(c AuditAppend) (any, error) {
	if len(c.Entries) > MaxAuditBatch {
		return nil, ruleErr(ErrInvalid, "%d audit entries in one append, more than %d", len(c.Entries), MaxAuditBatch)
	}
	keep := min(max(c.Keep, MinAuditKeep), MaxAuditKeep)
	for _, e := range c.Entries {
		s.AuditSeq++
		e.Seq = s.AuditSeq
		for _, f := range []*string{&e.Peer, &e.RemoteAddr, &e.Subject, &e.Namespace, &e.Method, &e.Path, &e.Reason} {
			if len(*f) > maxAuditField {
				*f = (*f)[:maxAuditField]
			}
		}
		if e.Subject == "" {
			s.AuditAnonymous = append(s.AuditAnonymous, e)
			s.AuditAnonymousSeen++
			continue
		}
		s.Audit = append(s.Audit, e)
	}
	if over := len(s.Audit) - keep; over > 0 {
		s.Audit = append([]AuditEntry(nil), s.Audit[over:]...)
	}
	if over := len(s.AuditAnonymous) - min(keep, MaxAnonymousAudit); over > 0 {
		s.AuditAnonymous = append([]AuditEntry(nil), s.AuditAnonymous[over:]...)
	}
	return len(c.Entries), nil
}

// AuditFilter selects audit entries (zero fields select all).
type AuditFilter struct {
	Namespace, Subject string
	Since              time.Time
	// Limit keeps the newest Limit entries (0: all).
	Limit int
}

// Audit returns the entries the filter selects, oldest first.
func (f *FSM) Audit(flt AuditFilter) []AuditEntry {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := []AuditEntry{}
	match := func(e AuditEntry) bool {
		return (flt.Namespace == "" || e.Namespace == flt.Namespace) && (flt.Subject == "" || e.Subject == flt.Subject) && !e.Time.Before(flt.Since)
	}
	// Both logs are in Seq order: merge them.
	users, anon := f.state.Audit, f.state.AuditAnonymous
	if flt.Subject != "" {
		anon = nil
	}
	for len(users) > 0 || len(anon) > 0 {
		var e AuditEntry
		if len(anon) == 0 || (len(users) > 0 && users[0].Seq < anon[0].Seq) {
			e, users = users[0], users[1:]
		} else {
			e, anon = anon[0], anon[1:]
		}
		if match(e) {
			out = append(out, e)
		}
	}
	if flt.Limit > 0 && len(out) > flt.Limit {
		out = out[len(out)-flt.Limit:]
	}
	return out
}

// AuditAnonymousSeen is how many entries of calls without a valid token
// the log took (it keeps only the last MaxAnonymousAudit of them).
func (f *FSM) AuditAnonymousSeen() uint64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.state.AuditAnonymousSeen
}
