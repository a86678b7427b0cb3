// Package catchup says whether a peer's replica has caught up with the
// cluster since the peer started, and syncs it with the leader.
//
// A peer that starts (or restarts) holds whatever its data dir had: a stale
// replica. Until it has applied every command the leader had applied when
// the peer asked (it has "caught up"), it serves no authenticated call (503
// with Retry-After, never a stale list or a 401 for a good token) and
// creates or starts no domain (deletes of domains nobody wants may go
// first). A Tracker is that state: the API, the host's reconciler, the job
// and template managers wait on it; the peer's leadership marks it when it
// leads.
package catchup
