package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/internal/keyedlimit"
	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/node/follow"
	"github.com/svc-project/svc/node/swarm"
	"github.com/svc-project/svc/raftfsm"
)

// Config configures the API server.
type Config struct {
	// What the handlers need of the peer, each named for its use (see
	// backend.go); one value may serve several.
	Replica     Replica
	Consensus   Consensus
	Propagation Propagation
	Readiness   Readiness
	Peers       Peers
	Links       PeerLinks
	Placer      Placer
	Jobs        Jobs
	Registries  Registries
	// Guests, nil on a peer that hosts no VMs (tests), works inside VMs.
	Guests Guests
	// Shared, nil on a peer that offers no shared storage, keeps this
	// node's shared folders.
	Shared SharedFolders
	// Audit, when set, takes the audit entry of every API write.
	Audit Auditor
	// Pending says why this peer answers no API call yet ("" when it
	// does): it was admitted pending and awaits an admin's approval.
	Pending func() string
	// Disk is the budget of this peer's data dir disk: an upload holds
	// room for what it writes, or is refused (nil: no bound).
	Disk *diskbudget.Budget
	// Keys are the cluster's secret keys (token signing, sealing).
	Keys auth.Keys
	// Membership admits and removes peers and keeps the fabric's keys;
	// nil in tests of the API alone (its routes then answer 503).
	Membership Membership
	// Images is this peer's blob store.
	Images *imagestore.Store
	// SignIn runs sign-ins through OpenID Connect providers; nil: the
	// sign-in routes answer 503.
	SignIn SignIn
	// RunnerPools is the leader's runner pool controller (nil: completed
	// deliveries are only recorded by the next sweep).
	RunnerPools RunnerPools
	// Snapshots saves and restores the cluster's state (nil: those
	// routes answer 503).
	Snapshots Snapshots
	// Swarm serves chunks of blobs to other peers and, on the leader,
	// tracks who has which (nil: none).
	Swarm *swarm.Service
	// Feed serves this peer's log to the hosts that follow it without
	// being Raft members (node/follow); nil serves none.
	Feed *follow.Feed

	Log *slog.Logger
	// Registry receives the HTTP metrics and is served on /metrics.
	Registry *prometheus.Registry
	// LeaderWait bounds how long a consistent read waits for the leader's
	// replica to apply its commit index (default 5 s).
	LeaderWait time.Duration
	// WriteTimeout bounds a write's commit on the leader (default 15 s).
	WriteTimeout time.Duration
	// Gate optionally refuses forwarding to some addresses (tests).
	Gate netgate.Gate
	// Limits bound connections and body reads.
	Limits Limits
	// Version is svc's version (the Kubernetes-style /version).
	Version string
	// NamespaceAlias, when set, is another name of the default namespace
	// in every path (orka-default: see ValidNamespaceAlias).
	NamespaceAlias string
}

// Server is the HTTP API of one peer: the request layer every request goes
// through (see core.go), with the handlers of each resource registered on
// it.
type Server struct {
	*core
	ready   Readiness
	links   PeerLinks
	router  *httprouter.Router
	routes  []Route
	fwd     *forwarder
	authn   *auth.Authenticator
	conns   *connLimiter
	fails   *keyedlimit.Limiter
	signIns *keyedlimit.Limiter
}

// Route is one registered endpoint.
type Route struct {
	Method string
	Path   string
	// Rule says who may call it.
	Rule Rule
	// Write routes change the state.
	Write bool
	// Target says where the request runs (reads with ?consistent=true run
	// on the leader too).
	Target Target
	// Upload routes stream a large body, timed by progress.
	Upload bool
	// Stream routes hold the connection as long as the client does (a
	// websocket): no body deadline, and a token may come as a subprotocol.
	Stream bool
	// SignIn routes are steps of a sign-in (no token: each may reach the
	// identity provider with the cluster's client secret): a client
	// address may take signInBurst of them at once and signInRate a
	// second, counted where the client's request came in.
	SignIn bool
	// PoolVM routes act in or on the VM :vm: a runner pool's VM only for
	// an admin or the pool (poolvms.go).
	PoolVM bool
	// Stale reads of the leader run on the peer asked with ?stale=true
	// (what it has applied, even with no leader).
	Stale bool
	// Door routes are the Kubernetes door's: it answers in the namespace
	// its caller named (the alias too), see unalias.
	Door bool
}

// leaderHop is how the route's request goes to the leader.
func (rt Route) leaderHop() leaderHop {
	switch {
	case rt.Upload || rt.Stream:
		return hopStream
	case rt.Write:
		return hopBatch
	}
	return hopReplay
}

type handler func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error

// New builds the server and its routes.
func New(cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.LeaderWait <= 0 {
		cfg.LeaderWait = 5 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 15 * time.Second
	}
	cfg.Limits.setDefaults()
	c := &core{cfg: &cfg, replica: cfg.Replica, raft: cfg.Consensus, log: cfg.Log}
	s := &Server{
		core: c, ready: cfg.Readiness, links: cfg.Links, router: httprouter.New(),
		authn: auth.NewAuthenticator(cfg.Replica.FSM(), cfg.Keys), fails: newAuthFails(), signIns: newSignInLimit(),
	}
	s.conns = newConnLimiter(cfg.Limits, cfg.Peers.IsPeer)
	s.metrics = newHTTPMetrics(cfg.Registry, s.conns)
	// Every answer is JSON: no redirects with HTML bodies. A trailing slash
	// is served as the path without it (see Handler); other spellings are a
	// JSON 404.
	s.router.RedirectTrailingSlash, s.router.RedirectFixedPath = false, false
	s.fwd = newForwarder(s)
	s.router.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, s.log, notFound("no route for %s %s", r.Method, r.URL.Path))
	})
	s.router.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, s.log, errorf(http.StatusMethodNotAllowed, api.ReasonBadRequest, "method %s is not allowed on %s", r.Method, r.URL.Path))
	})
	s.router.PanicHandler = func(w http.ResponseWriter, r *http.Request, v any) {
		if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
			// An answer that cannot go on (a forwarded answer cut off
			// mid-way): net/http ends the connection, and nothing is
			// written after what was sent.
			panic(v)
		}
		s.log.Error("panic serving request", "path", r.URL.Path, "panic", v)
		writeError(w, s.log, errorf(http.StatusInternalServerError, api.ReasonInternalError, "internal error"))
	}
	for _, r := range []resources{
		&tenancyAPI{core: c, keys: cfg.Keys},
		&nodesAPI{core: c, peers: cfg.Peers},
		&sharedStorageAPI{core: c, shared: cfg.Shared},
		&vmsAPI{core: c, placer: cfg.Placer, registries: cfg.Registries, fwd: s.fwd},
		&guestAPI{core: c, guests: cfg.Guests, ready: cfg.Readiness},
		&vmConfigsAPI{core: c},
		&imagesAPI{core: c, images: cfg.Images, jobs: cfg.Jobs, fwd: s.fwd, links: cfg.Links, disk: cfg.Disk},
		&registryAPI{core: c, jobs: cfg.Jobs, registries: cfg.Registries, keys: cfg.Keys},
		&clusterAPI{core: c, membership: cfg.Membership, snapshots: cfg.Snapshots},
		&peerAPI{core: c, swarm: cfg.Swarm, images: cfg.Images, authn: s.authn, feed: cfg.Feed},
		&oidcAPI{core: c, signin: cfg.SignIn, keys: cfg.Keys},
		&runnerPoolsAPI{core: c, pools: cfg.RunnerPools, keys: cfg.Keys},
	} {
		r.routes(s)
	}
	// The request layer's own: the writes a follower batches to the leader.
	s.handle(Route{Method: http.MethodPost, Path: forwardBatchPath, Rule: RulePeer}, s.forwardBatch)
	s.kubeRoutes()
	s.router.Handler(http.MethodGet, "/metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{}))
	s.routes = append(s.routes, Route{Method: http.MethodGet, Path: "/metrics", Rule: RuleOpen})
	s.pageRoutes()
	return s
}

// handle registers a route; its Target decides where a request runs.
func (s *Server) handle(rt Route, h handler) {
	s.routes = append(s.routes, rt)
	mode := bodyWhole
	if rt.Upload {
		mode = bodyProgress
	}
	s.router.Handle(rt.Method, rt.Path, func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		s.unalias(r, p, rt.Door)
		if rt.Stream {
			tokenFromSubprotocol(r)
		}
		// A client address that failed authentication too often is slowed
		// down before any signature is checked, and not audited call by
		// call; a token this peer has verified before still passes (other
		// clients behind the same address go on working).
		ip := clientIP(r)
		_, fromPeer := s.links.PeerOf(r)
		checked := rt.Rule != RuleOpen && rt.Rule != RulePeer && !fromPeer
		if checked && s.fails.Blocked(ip, time.Now()) && !s.authn.Known(r.Header.Get("Authorization")) {
			s.metrics.authThrottled.Inc()
			e := errorf(http.StatusTooManyRequests, api.ReasonTooManyRequests, "too many calls without a valid token from %s; slow down", ip)
			e.retryAfter = "1"
			writeError(w, s.log, e)
			return
		}
		if !rt.Stream && s.cfg.Audit != nil && audited(r) {
			sw, start := &statusRecorder{ResponseWriter: w}, time.Now()
			if rt.SignIn {
				sw.keep = make([]byte, 0, maxSignedInAnswer)
			}
			w = sw
			defer func() {
				if rt.SignIn {
					s.auditSignIn(r, p, sw, start)
					return
				}
				s.auditWrite(r, p, principalOf(r.Context()), sw.code, start)
			}()
		}
		if !rt.Stream {
			s.withBodyDeadline(w, r, mode)
			defer drainBody(w, r)
		}
		s.dropUnprovenForwarding(r)
		if rt.Stream && isUpgrade(r) && forwarded(r) == "" {
			// The peer the client reached judges a websocket's origin (the
			// hop to a VM's host rewrites Host, so not there).
			if err := checkOrigin(r); err != nil {
				writeError(w, s.log, err)
				return
			}
		}
		if rt.Rule != RuleOpen && rt.Rule != RulePeer && s.cfg.Pending != nil {
			if why := s.cfg.Pending(); why != "" {
				writeError(w, s.log, unavailable("30", "%s; until then, call another peer", why))
				return
			}
		}
		if rt.Rule != RuleOpen && rt.Rule != RulePeer {
			if h, halted := s.replica.FSM().Halted(); halted {
				writeError(w, s.log, unavailable("30", "peer %s stopped applying the cluster's log: %s; until then, call another peer", s.replica.Name(), h.Reason))
				return
			}
		}
		if rt.Rule != RuleOpen && !s.ready.CaughtUp() {
			// A peer that has just started is usually a moment from caught up.
			wctx, cancel := context.WithTimeout(r.Context(), catchUpWait)
			ok := s.ready.WaitCaughtUp(wctx)
			cancel()
			if !ok {
				writeError(w, s.log, unavailable("1", "peer %s is catching up with the cluster's state; retry shortly", s.replica.Name()))
				return
			}
		}
		if rt.SignIn && forwarded(r) == "" && !s.signIns.Allow(ip, time.Now()) {
			e := errorf(http.StatusTooManyRequests, api.ReasonTooManyRequests, "too many sign-in steps from %s; slow down", ip)
			e.retryAfter = "5"
			writeError(w, s.log, e)
			return
		}
		pr, err := s.authorize(r, rt.Rule, p)
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, pr)) // a refusal names who was refused too
		if err == nil && rt.PoolVM {
			err = s.guardPoolVM(pr, p)
		}
		if err != nil {
			if checked && toAPIError(err).code == http.StatusUnauthorized {
				s.fails.Spend(ip, time.Now())
			}
			writeError(w, s.log, err)
			return
		}
		target := rt.Target
		if target == Here && rt.Rule != RuleOpen {
			// The caller's last write through this peer shows in what it reads here.
			if err := s.fwd.pending.await(r.Context(), r.Header.Get("Authorization"), s.replica.FSM()); err != nil {
				s.log.Warn("replica did not catch up with the caller's write", "err", err)
			}
		}
		if target == Here && !rt.Write && rt.Rule != RuleOpen && r.URL.Query().Get("consistent") == "true" {
			target = Leader
		}
		if rt.Stale && r.URL.Query().Get("stale") == "true" {
			target = Here
		}
		switch target {
		case Leader:
			if s.fwd.toLeader(w, r, rt.leaderHop()) {
				return
			}
			if !rt.Write {
				if err := s.readIndex(r.Context()); err != nil {
					writeError(w, s.log, err)
					return
				}
			}
		case VMHost:
			if s.fwd.toVMHost(w, r, p) {
				return
			}
		case NodePeer:
			if s.fwd.toNodePeer(w, r, p) {
				return
			}
		}
		// A write forwarded by a peer's proxy, or a peer's own call to a
		// peer route (the users root names on a host), is answered with
		// the applied index: the calling peer waits for its replica to
		// have it before answering its own caller (read-your-writes).
		if rt.Write && (forwarded(r) != "" || rt.Rule == RulePeer) {
			w = &indexWriter{ResponseWriter: w, fsm: s.replica.FSM()}
		}
		if err := h(w, r, p); err != nil {
			writeError(w, s.log, err)
		}
	})
}

// readIndex makes a consistent read on the leader linearizable: it notes the
// index of the last applied command (which covers every acknowledged write
// once this leader has applied its term's barrier), confirms with a quorum
// that it still leads, and waits until the replica has applied that index.
func (s *Server) readIndex(ctx context.Context) error {
	actx, acancel := context.WithTimeout(ctx, s.cfg.LeaderWait)
	idx, err := s.raft.AppliedIndex(actx) // a leader just elected: its barrier first
	acancel()
	if err != nil {
		return unavailable("1", "cannot serve a consistent read yet: %v", err)
	}
	if err := s.raft.VerifyLeader(ctx); err != nil {
		return unavailable("1", "cannot confirm leadership for a consistent read: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, s.cfg.LeaderWait)
	defer cancel()
	if err := s.replica.FSM().WaitIndex(wctx, idx); err != nil {
		return unavailable("1", "the leader's replica did not reach index %d: %v", idx, err)
	}
	return nil
}

// dropUnprovenForwarding removes the forwarding header of a request that
// did not come from a peer over the fabric: only a peer may say it
// forwarded a request (which changes how it is routed and answered).
func (s *Server) dropUnprovenForwarding(r *http.Request) {
	if r.Header.Get(api.HeaderForwardedBy) == "" {
		return
	}
	if _, ok := s.links.PeerOf(r); ok {
		return
	}
	r.Header.Del(api.HeaderForwardedBy)
	r.Header.Del(api.HeaderPlaceOnly)
}

// indexWriter stamps the applied index on the answer to a forwarded write.
type indexWriter struct {
	http.ResponseWriter
	fsm   *raftfsm.FSM
	wrote bool
}

func (w *indexWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.Header().Set(api.HeaderIndex, strconv.FormatUint(w.fsm.Index(), 10))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *indexWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *indexWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Routes lists every registered endpoint.
func (s *Server) Routes() []Route { return append([]Route(nil), s.routes...) }

// Handler returns the HTTP handler of the API, with metrics. A path with a
// trailing slash is served as the path without it.
func (s *Server) Handler() http.Handler {
	return s.metrics.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; len(p) > 1 && strings.HasSuffix(p, "/") {
			r.URL.Path = strings.TrimRight(p, "/")
			r.URL.RawPath = strings.TrimRight(r.URL.RawPath, "/")
		}
		s.router.ServeHTTP(w, r)
	}))
}

// Serve answers on l until ctx ends, then shuts down gracefully. With tlsCfg
// it serves HTTPS. The connections of every listener a server serves count
// against the same limits.
func (s *Server) Serve(ctx context.Context, l net.Listener, tlsCfg *tls.Config) error {
	l = &limitListener{Listener: l, lim: s.conns, plain: tlsCfg == nil, refused: s.metrics.connsRefused.Inc}
	if tlsCfg != nil {
		l = tls.NewListener(l, tlsCfg)
	}
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.Limits.HeaderTimeout,
		IdleTimeout:       s.cfg.Limits.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve API: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	s.fwd.close()
	if err != nil {
		return fmt.Errorf("shut down API: %w", err)
	}
	return nil
}
