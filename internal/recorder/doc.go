// Package recorder is an http.ResponseWriter that keeps one answer whole in
// memory, for a handler served in process whose answer is read before it
// goes anywhere: a request forwarded to the leader and read by the peer
// that forwarded it, an /api/v1 call the Kubernetes door makes for its
// caller, one request of a batch of hops. A recorder may bound the body it
// keeps: a handler that writes more gets ErrTooLarge.
package recorder
