package httpapi

import (
	"log/slog"
	"sync"
)

// The API in two layers. The request layer (Server: server.go, authz.go,
// forward*.go, ryw.go, origin.go, conns.go) takes every request: its route,
// who calls, where it runs (here, the leader, a VM's host, a node's peer),
// forwarding, read-your-writes, write batching, body deadlines, the audit
// hook. Below it the handlers, one small type per resource, each with the
// few services of the peer it needs, register their routes on it
// (routes()). What every handler shares is core.

// core is what the handlers of every resource share: the configuration,
// the replica they read, the consensus a write goes through, the log and
// metrics, the watch hub, and the helpers every resource uses (writes.go,
// convert.go, alias.go, the namespace and reach checks, watches).
type core struct {
	cfg     *Config
	replica Replica
	raft    Consensus
	log     *slog.Logger
	metrics *httpMetrics

	hubMu sync.Mutex
	hub   *watchHub // nil until RunWatches
}

// resources are the handlers of the API's resources, each registering its
// routes on the request layer.
type resources interface {
	routes(s *Server)
}
