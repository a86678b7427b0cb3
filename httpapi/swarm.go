package httpapi

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/node/swarm"
)

// serveChunk sends another peer a chunk of a blob this peer holds or is
// fetching (node/swarm).
func (s *peerAPI) serveChunk(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if s.swarm == nil {
		return notFound("peer %s serves no chunks", s.replica.Name())
	}
	digest := p.ByName("digest")
	off, err1 := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	size, err2 := strconv.ParseInt(r.URL.Query().Get("size"), 10, 64)
	if err1 != nil || err2 != nil {
		return badRequest("offset and size: whole numbers are required")
	}
	// A registry pull of one namespace (?scope=) is served only what
	// that namespace may read.
	body, done, err := s.swarm.OpenChunk(r.URL.Query().Get("scope"), digest, off, size)
	switch {
	case errors.Is(err, swarm.ErrBusy):
		return unavailable("1", "peer %s serves as many chunks as it may; ask another peer", s.replica.Name())
	case errors.Is(err, swarm.ErrNotHeld):
		return notFound("peer %s does not have %d bytes at %d of %s", s.replica.Name(), size, off, digest)
	case errors.Is(err, imagestore.ErrBadDigest):
		return badRequest("%v", err)
	case err != nil:
		return badRequest("%v", err)
	}
	defer done()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, body) // a peer that stops reading gets a short chunk, which it refuses
	return nil
}

// chunkPlan tells another peer how a blob this peer holds is cut.
func (s *peerAPI) chunkPlan(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if s.swarm == nil {
		return notFound("peer %s serves no chunk plans", s.replica.Name())
	}
	digest := p.ByName("digest")
	if !imagestore.ValidDigest(digest) {
		return badRequest("%q is not a sha256 digest", digest)
	}
	plan, err := s.swarm.Plan(r.Context(), digest)
	if errors.Is(err, swarm.ErrNotHeld) {
		return notFound("blob %s is not on peer %s", digest, s.replica.Name())
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, plan)
	return nil
}

// announce is the leader's tracker: a fetching peer says what it has of a
// plan and hears what the others have.
func (s *peerAPI) announce(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if s.swarm == nil {
		return notFound("peer %s runs no tracker", s.replica.Name())
	}
	if !s.raft.IsLeader() {
		w.Header().Set(api.HeaderNotLeader, "1")
		return unavailable("1", "peer %s is not the leader; the leader tracks fetches", s.replica.Name())
	}
	var a swarm.Announce
	if err := decodeJSON(w, r, &a); err != nil {
		return err
	}
	reply, err := s.swarm.Tracker().Announce(p.ByName("key"), principalOf(r.Context()).Name, a, time.Now())
	if errors.Is(err, swarm.ErrTrackerFull) {
		return unavailable("5", "%v", err)
	}
	if err != nil {
		return badRequest("%v", err)
	}
	writeJSON(w, http.StatusOK, reply)
	return nil
}
