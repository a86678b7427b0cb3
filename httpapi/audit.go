package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/raftfsm"
)

// Auditor takes the audit entries of the API writes this peer receives
// (node/audit.Recorder); it must not block.
type Auditor interface {
	// Record takes an entry and the bearer token its request carried.
	Record(e raftfsm.AuditEntry, token string)
	// Keep is how many entries the log keeps, as this peer is configured:
	// the leader's bound is the one applied, whoever proposes.
	Keep() int
}

// audited says whether a request is an API write the audit log records
// (or a snapshot's read): any write method on /api/v1 but the peers' internal routes, received
// from a client (a forwarded request was recorded where it came in).
func audited(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	case http.MethodGet:
		// A snapshot holds the cluster's secrets: who took one is recorded.
		if r.URL.Path != api.SnapshotPath {
			return false
		}
	default:
		return false
	}
	return strings.HasPrefix(r.URL.Path, "/api/v1/") && !strings.HasPrefix(r.URL.Path, "/api/v1/internal/") && forwarded(r) == ""
}

// subjectOf names a principal in the audit log.
func subjectOf(p auth.Principal) string {
	switch p.Kind {
	case "":
		return ""
	case auth.KindServiceAccount:
		return p.Namespace + ":" + p.Name
	case auth.KindPeer:
		return "peer:" + p.Name
	}
	return p.Name
}

// auditWrite writes the audit entry of an answered write: never its body, its
// headers or its query (no secret goes there).
func (s *Server) auditWrite(r *http.Request, p httprouter.Params, pr auth.Principal, code int, start time.Time) {
	token, _ := auth.BearerToken(r.Header.Get("Authorization"))
	s.auditRecord(r, subjectOf(pr), p.ByName("namespace"), code, start, token)
}

// maxSignedInAnswer bounds what the audit keeps of a sign-in's answer to
// read who signed in.
const maxSignedInAnswer = 64 << 10

// auditSignIn writes the audit entry of a sign-in step: a sign-in that
// answered a token is the person's (the token is what shows the leader
// the entry is theirs), any other step carries no subject.
func (s *Server) auditSignIn(r *http.Request, p httprouter.Params, sw *statusRecorder, start time.Time) {
	subject, token := "", ""
	if sw.code == http.StatusOK {
		var in api.SignedIn
		if json.Unmarshal(sw.keep, &in) == nil && in.Token != "" {
			subject, token = in.User, in.Token
		}
	}
	s.auditRecord(r, subject, p.ByName("namespace"), sw.code, start, token)
}

// auditRecord writes one audit entry of r, answered with code, as
// subject's, whose request carried token.
func (s *core) auditRecord(r *http.Request, subject, ns string, code int, start time.Time, token string) {
	if s.cfg.Audit == nil {
		return
	}
	e := raftfsm.AuditEntry{
		Time: start.UTC(), Peer: s.replica.Name(), RemoteAddr: clientIP(r), Subject: subject,
		Namespace: ns, Method: r.Method, Path: r.URL.Path, Code: code,
	}
	if code >= 300 {
		e.Reason = http.StatusText(code)
	}
	s.cfg.Audit.Record(e, token)
}

// vetAudit is the leader's check of the audit entries another peer
// proposes (CheckProposer has checked that each is the peer's own and
// dated near now). A peer appends what it witnessed: an entry keeps its
// subject only when the token of its request (tokens, one per entry) is
// the subject's and was good at the entry's time, or when the subject is
// the proposing peer's own root; any other goes with the calls that
// carried no valid token, saying whom it named. And a peer never trims:
// the log keeps the leader's configured bound, whatever the peer asked.
func (s *peerAPI) vetAudit(peer string, body json.RawMessage, tokens []string) (json.RawMessage, error) {
	var c raftfsm.AuditAppend
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, badRequest("audit append: %v", err)
	}
	if len(tokens) > len(c.Entries) {
		return nil, badRequest("field \"tokens\": %d tokens for %d entries", len(tokens), len(c.Entries))
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.Subject == "" || e.Subject == "root@"+peer {
			continue
		}
		if i < len(tokens) && tokens[i] != "" {
			if pr, err := s.authn.Authenticate("Bearer "+tokens[i], e.Time); err == nil && subjectOf(pr) == e.Subject {
				continue
			}
		}
		e.Reason = fmt.Sprintf("peer %s named %q without that subject's token", peer, e.Subject)
		e.Subject = ""
	}
	if s.cfg.Audit != nil {
		c.Keep = s.cfg.Audit.Keep()
	}
	return json.Marshal(c)
}

// listAudit answers the audit log, filtered: ?namespace=, ?subject=,
// ?since= (RFC 3339, or a duration back from now such as 1h), ?limit=.
func (s *clusterAPI) listAudit(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	flt := raftfsm.AuditFilter{Namespace: q.Get("namespace"), Subject: s.canonicalSubject(q.Get("subject")), Limit: defaultAuditLimit}
	if s.isAlias(flt.Namespace) {
		flt.Namespace = api.DefaultNamespace
	}
	if v := q.Get("since"); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			flt.Since = time.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, v); err == nil {
			flt.Since = t
		} else {
			return badRequest("query parameter \"since\": %q is neither a time (RFC 3339) nor a duration such as 1h", v)
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxAuditLimit {
			return badRequest("query parameter \"limit\": %q is not 1 to %d", v, maxAuditLimit)
		}
		flt.Limit = n
	}
	writeJSON(w, http.StatusOK, api.List[api.AuditEntry]{Items: s.replica.FSM().Audit(flt)})
	return nil
}

// Bounds of an audit read.
const (
	defaultAuditLimit = 1000
	maxAuditLimit     = 100_000
)
