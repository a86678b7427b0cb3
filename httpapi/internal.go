package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/node/follow"
	"github.com/svc-project/svc/node/swarm"
	"github.com/svc-project/svc/raftfsm"
)

// peerAPI serves the peers' own routes: proposals, indexes, trust, blobs and swarm chunks.
type peerAPI struct {
	*core
	swarm  *swarm.Service
	images *imagestore.Store
	authn  *auth.Authenticator
	feed   *follow.Feed
}

func (s *peerAPI) routes(srv *Server) {
	get, post := http.MethodGet, http.MethodPost
	// The peers' own routes: a caller is a peer only by its certificate,
	// over the fabric (the HTTPS port, the peers' server name).
	srv.handle(Route{Method: get, Path: "/api/v1/internal/blobs/:digest", Rule: RulePeer}, s.serveBlob)
	srv.handle(Route{Method: get, Path: swarm.ChunkRoute, Rule: RulePeer}, s.serveChunk)
	srv.handle(Route{Method: get, Path: swarm.PlanRoute, Rule: RulePeer}, s.chunkPlan)
	srv.handle(Route{Method: post, Path: swarm.AnnounceRoute, Rule: RulePeer}, s.announce)
	srv.handle(Route{Method: get, Path: "/api/v1/internal/commit-index", Rule: RulePeer}, s.commitIndex)
	srv.handle(Route{Method: get, Path: api.AppliedIndexPath, Rule: RulePeer}, s.appliedIndex)
	srv.handle(Route{Method: get, Path: api.TrustPath, Rule: RulePeer}, s.trust)
	if s.feed != nil {
		// a host that follows the log through this peer (node/follow)
		srv.handle(Route{Method: get, Path: follow.LogPath, Rule: RulePeer}, s.serveLog)
		srv.handle(Route{Method: get, Path: follow.StatePath, Rule: RulePeer}, s.serveState)
	}
	// Not forwarded: the leader judges a proposal by the proposing peer's
	// certificate, which a forwarding peer would replace with its own.
	srv.handle(Route{Method: post, Path: "/api/v1/internal/apply", Rule: RulePeer, Write: true}, s.internalApply)
}

// maxApplyBody bounds a peer's proposal: an audit batch of
// raftfsm.MaxAuditBatch entries with their requests' tokens.
const maxApplyBody = 8 << 20

func (s *peerAPI) internalApply(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req api.ApplyRequest
	if err := decodeJSONMax(w, r, &req, maxApplyBody); err != nil {
		return err
	}
	t := raftfsm.Type(req.Type)
	if len(req.Body) == 0 || !json.Valid(req.Body) {
		return badRequest("field \"body\": a JSON object is required")
	}
	if !s.raft.IsLeader() {
		// The proposer asks the new leader itself (node's applyRemote).
		w.Header().Set(api.HeaderNotLeader, "1")
		return unavailable("1", "peer %s is not the leader; propose to the leader", s.replica.Name())
	}
	// A peer proposes only for itself: its VMs, blobs, images, jobs,
	// addresses and the audit entries of what it received.
	peer := principalOf(r.Context()).Name
	if err := s.replica.FSM().CheckProposer(peer, t, req.Body, time.Now()); err != nil {
		return errorf(http.StatusForbidden, api.ReasonForbidden, "%v", err)
	}
	raw := json.RawMessage(req.Body)
	if t == raftfsm.TypeAuditAppend {
		var err error
		if raw, err = s.vetAudit(peer, raw, req.Tokens); err != nil {
			return err
		}
	}
	var body any = raw
	if _, err := s.apply(r.Context(), t, body); err != nil {
		return err
	}
	// The proposing peer waits for its replica to reach this index.
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(s.replica.FSM().Index(), 10))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// commitIndex tells a restarted peer the index its replica must reach.
func (s *peerAPI) commitIndex(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.LeaderWait)
	defer cancel()
	idx, err := s.raft.AppliedIndex(ctx)
	if err != nil {
		return unavailable("1", "%v", err)
	}
	writeJSON(w, http.StatusOK, api.CommitIndex{Index: idx})
	return nil
}

// appliedIndex tells another peer the index this peer's replica has
// applied (a write that must reach every replica waits for it).
func (s *peerAPI) appliedIndex(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	writeJSON(w, http.StatusOK, api.CommitIndex{Index: s.replica.FSM().Index()})
	return nil
}

// trust tells another peer which peers this replica admits.
func (s *peerAPI) trust(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	fb, ok := s.replica.FSM().Fabric()
	if !ok {
		return unavailable("1", "this replica has no fabric yet")
	}
	out := api.PeerTrust{Index: fb.TrustIndex, Members: map[string]string{}, Removed: map[string]api.PeerRemoval{}}
	for name, p := range fb.Peers {
		out.Members[name] = p.KeyID
	}
	for kid, r := range fb.Removed {
		out.Removed[kid] = api.PeerRemoval{Name: r.Name, At: r.At, By: r.By}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *peerAPI) serveLog(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	s.feed.ServeLog(w, r)
	return nil
}

func (s *peerAPI) serveState(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	s.feed.ServeState(w, r)
	return nil
}
