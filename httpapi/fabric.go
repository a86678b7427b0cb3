package httpapi

import (
	"crypto/sha256"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// clusterAPI serves the cluster as admins run it: its CA, join tokens, the gossip key, nodes removed and approved, the users root names on a host, the HTTPS certificate, snapshots and the audit log.
type clusterAPI struct {
	*core
	membership Membership
	snapshots  Snapshots
}

func (s *clusterAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	get, post, del := http.MethodGet, http.MethodPost, http.MethodDelete
	srv.handle(Route{Method: post, Path: "/api/v1/upload/cert", Rule: RuleAdmin, Write: true, Target: Leader}, s.uploadCert)
	srv.handle(Route{Method: get, Path: "/api/v1/audit", Rule: RuleAdmin}, s.listAudit)
	srv.handle(Route{Method: get, Path: "/api/v1/cluster/ca", Rule: RuleOpen}, s.clusterCA)
	srv.handle(Route{Method: get, Path: "/api/v1/cluster/join-tokens", Rule: RuleAdmin}, s.listJoinTokens)
	srv.handle(Route{Method: post, Path: "/api/v1/cluster/join-tokens", Rule: RuleAdmin, Write: true, Target: Leader}, s.createJoinToken)
	srv.handle(Route{Method: del, Path: "/api/v1/cluster/join-tokens/:id", Rule: RuleAdmin, Write: true, Target: Leader}, s.revokeJoinToken)
	srv.handle(Route{Method: post, Path: "/api/v1/cluster/rotate-gossip-key", Rule: RuleAdmin, Write: true, Target: Leader}, s.rotateGossipKey)
	srv.handle(Route{Method: get, Path: api.SnapshotPath, Rule: RuleAdmin, Target: Leader, Stale: true}, s.saveSnapshot)
	srv.handle(Route{Method: post, Path: api.SnapshotPath, Rule: RuleAdmin, Write: true, Target: Leader, Upload: true}, s.restoreSnapshot)
	srv.handle(Route{Method: del, Path: ns + "/nodes/:name", Rule: RuleAdmin, Write: true, Target: Leader}, s.removeNode)
	srv.handle(Route{Method: post, Path: ns + "/nodes/:name/approve", Rule: RuleAdmin, Write: true, Target: Leader}, s.approveNode)
	srv.handle(Route{Method: post, Path: api.HostUserPath, Rule: RulePeer, Write: true, Target: Leader}, s.hostUser)
}

// The cluster's fabric as admins see it: join tokens, node removal, the
// gossip key, the CA.

func (s *clusterAPI) needMembership() (Membership, error) {
	if s.membership == nil {
		return nil, unavailable("5", "this peer does not manage the cluster's membership")
	}
	return s.membership, nil
}

// clusterCA answers the cluster's CA certificate (no token: it is public).
func (s *clusterAPI) clusterCA(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	fb, ok := s.replica.FSM().Fabric()
	if !ok {
		return unavailable("1", "the cluster is not initialised yet")
	}
	writeJSON(w, http.StatusOK, api.ClusterCA{
		CACert:      string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: fb.CACert})),
		Fingerprint: fmt.Sprintf("%x", sha256.Sum256(fb.CACert)),
	})
	return nil
}

// joinTokenRecord is a token's record as the API shows it (never its
// secret's hash).
func joinTokenRecord(t raftfsm.JoinToken, now time.Time) api.JoinToken {
	out := api.JoinToken{ID: t.ID, CreatedAt: t.CreatedAt, CreatedBy: t.CreatedBy, ExpiresAt: t.ExpiresAt, Uses: t.Uses, Used: t.Used, UsedBy: t.UsedBy, AutoApprove: t.AutoApprove}
	if out.UsedBy == nil {
		out.UsedBy = []string{}
	}
	switch {
	case t.Revoked:
		out.State = api.JoinTokenRevoked
	case !t.ExpiresAt.After(now):
		out.State = api.JoinTokenExpired
	case t.Used >= t.Uses:
		out.State = api.JoinTokenUsedUp
	default:
		out.State = api.JoinTokenActive
	}
	return out
}

func (s *clusterAPI) listJoinTokens(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	now := time.Now()
	items := []api.JoinToken{}
	for _, t := range s.replica.FSM().JoinTokens() {
		items = append(items, joinTokenRecord(t, now))
	}
	writeJSON(w, http.StatusOK, api.List[api.JoinToken]{Items: items})
	return nil
}

func (s *clusterAPI) createJoinToken(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	m, err := s.needMembership()
	if err != nil {
		return err
	}
	var req api.JoinTokenRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
	}
	var ttl time.Duration
	if req.TTL != "" {
		if ttl, err = time.ParseDuration(req.TTL); err != nil || ttl <= 0 {
			return badRequest("field \"ttl\": a positive Go duration such as \"24h\" is required, got %q", req.TTL)
		}
	}
	if req.Uses < 0 || req.Uses > raftfsm.MaxJoinTokenUses {
		return badRequest("field \"uses\": 1 to %d hosts", raftfsm.MaxJoinTokenUses)
	}
	tok, rec, err := m.CreateJoinToken(r.Context(), ttl, req.Uses, req.AutoApprove, owner(r.Context()))
	if err != nil {
		return err
	}
	out := joinTokenRecord(rec, time.Now())
	out.Token = tok
	s.log.Info("join token created", "id", rec.ID, "expires", rec.ExpiresAt, "uses", rec.Uses, "autoApprove", rec.AutoApprove, "by", owner(r.Context()))
	writeJSON(w, http.StatusCreated, out)
	return nil
}

func (s *clusterAPI) revokeJoinToken(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id := p.ByName("id")
	if _, err := s.apply(r.Context(), raftfsm.TypeJoinTokenRevoke, raftfsm.JoinTokenRevoke{ID: id}); err != nil {
		return err
	}
	s.log.Info("join token revoked", "id", id, "by", owner(r.Context()))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *clusterAPI) rotateGossipKey(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	m, err := s.needMembership()
	if err != nil {
		return err
	}
	if err := m.RotateGossipKey(r.Context()); err != nil {
		if strings.Contains(err.Error(), "did not install") {
			return unavailable("5", "%v", err)
		}
		return err
	}
	writeJSON(w, http.StatusOK, api.Message{Message: "the gossip key was replaced on every live peer"})
	return nil
}

// nodeOfPath is the membership and the node the path names, which must be
// of the path's namespace where its record is.
func (s *clusterAPI) nodeOfPath(p httprouter.Params) (Membership, string, error) {
	m, err := s.needMembership()
	if err != nil {
		return nil, "", err
	}
	ns, name := p.ByName("namespace"), p.ByName("name")
	if err := s.requireNamespace(ns); err != nil {
		return nil, "", err
	}
	if n, ok := s.replica.FSM().Node(name); ok && n.Namespace != ns {
		return nil, "", notFound("node %q not found in namespace %q", name, ns)
	}
	return m, name, nil
}

// removeNode removes a node of the path's namespace from the cluster for
// good.
func (s *clusterAPI) removeNode(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	m, name, err := s.nodeOfPath(p)
	if err != nil {
		return err
	}
	if err := m.RemoveNode(r.Context(), name, owner(r.Context())); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// approveNode approves a peer of the path's namespace that was admitted
// pending: it may then have the cluster secret and a vote, and take VMs.
func (s *clusterAPI) approveNode(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	m, name, err := s.nodeOfPath(p)
	if err != nil {
		return err
	}
	was, _ := s.replica.FSM().PeerIdentity(name)
	if _, err := m.Approve(r.Context(), name, owner(r.Context())); err != nil {
		return err
	}
	msg := fmt.Sprintf("node %s approved: it fetches the cluster secret from a peer and takes VMs within seconds", name)
	if !was.Pending {
		msg = fmt.Sprintf("node %s was approved already", name)
	}
	writeJSON(w, http.StatusOK, api.Message{Message: msg})
	return nil
}

// hostUser records or removes a user that root on a peer's host named:
// only a peer calls it, and the audit log says which host's root it was.
func (s *clusterAPI) hostUser(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req api.HostUserRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if err := api.ValidateUserName("user", req.User); err != nil {
		return badRequest("%v", err)
	}
	peer := principalOf(r.Context()).Name
	start := time.Now()
	var err error
	if req.Remove {
		_, err = s.apply(r.Context(), raftfsm.TypeUserRemove, raftfsm.UserRemove{Name: req.User})
	} else {
		_, err = s.apply(r.Context(), raftfsm.TypeUserUpsert, raftfsm.UserUpsert{Name: req.User, Admin: req.Admin, Time: time.Now().UTC().Truncate(time.Second)})
	}
	code := http.StatusNoContent
	if err != nil {
		code = toAPIError(err).code
	}
	s.auditRecord(r, "root@"+peer, "", code, start, "")
	if err != nil {
		return err
	}
	s.log.Info("host user", "user", req.User, "admin", req.Admin, "remove", req.Remove, "by", "root@"+peer)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
