package swarm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/svc-project/svc/imagestore"
)

// Config sets up a peer's swarm service.
type Config struct {
	// Context ends with the peer: seeding stops with it.
	Context context.Context
	// Name is this peer's node name.
	Name  string
	Store *imagestore.Store
	// HTTP reaches the other peers over the fabric; PeerURL is a peer's
	// API base URL ("" when unknown); Leader names the Raft leader and
	// its URL.
	HTTP    *http.Client
	PeerURL func(node string) string
	Leader  func(ctx context.Context) (name, url string, err error)
	// MaxUploads bounds the chunks this peer serves at once (default 4):
	// serving never takes the whole link its own VMs use.
	MaxUploads int
	// Workers is how many chunks a fetch reads at once (default 4).
	Workers int
	// Readable says whether namespace scope may read the blob digest: a
	// chunk asked for a fetch of that scope is served from a blob this
	// peer holds only then (Job.Scope). Nil: never.
	Readable func(scope, digest string) bool
	// CorruptServed flips a byte of every chunk this peer serves: a test
	// hook standing for a peer with a bad disk or memory.
	CorruptServed bool
	Log           *slog.Logger
	// Registry, when set, gets the service's metrics.
	Registry prometheus.Registerer
}

// Service is one peer's part of the swarm: it fetches blobs, serves the
// chunks it has (of whole blobs and of fetches under way), and, on the
// leader, tracks who has what.
type Service struct {
	cfg     Config
	tracker *Tracker
	slots   chan struct{}
	served  atomic.Int64
	fetched atomic.Int64
	chunks  *prometheus.CounterVec
	dropped prometheus.Counter

	mu     sync.Mutex
	active map[string]*active // by activeKey(scope, blob digest)
	cuts   map[string]*cutting
}

// active is a fetch under way whose written chunks may be served.
type active struct {
	key    string // activeKey(scope, digest)
	digest string
	run    *run
	idx    map[int64]int
	file   *os.File
	// rw is held (read) while a chunk is served from file, and
	// (write) before the file is moved away.
	rw   sync.RWMutex
	gone bool
	done chan struct{}
	err  error
}

type cutting struct {
	done chan struct{}
	plan Plan
	err  error
}

// New returns a peer's swarm service.
func New(cfg Config) *Service {
	if cfg.MaxUploads <= 0 {
		cfg.MaxUploads = 4
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Context == nil {
		cfg.Context = context.Background()
	}
	s := &Service{
		cfg: cfg, tracker: NewTracker(), slots: make(chan struct{}, cfg.MaxUploads),
		active: map[string]*active{}, cuts: map[string]*cutting{},
		chunks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_swarm_chunks_total",
			Help: "Chunks of blobs this peer fetched, by where they came from (peer, origin, local, resumed).",
		}, []string{"from"}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_swarm_dropped_peers_total",
			Help: "Peers this peer stopped asking for a blob's chunks because they served a chunk that did not match its digest.",
		}),
	}
	if cfg.Registry != nil {
		cfg.Registry.MustRegister(s.chunks, s.dropped, prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "svc_swarm_served_bytes_total",
			Help: "Bytes of chunks this peer served to other peers.",
		}, func() float64 { return float64(s.served.Load()) }))
	}
	return s
}

// Tracker is this peer's tracker (it answers while this peer leads).
func (s *Service) Tracker() *Tracker { return s.tracker }

// FetchedBytes is what this peer received from other peers since it
// started (counted as each fetch ends).
func (s *Service) FetchedBytes() int64 { return s.fetched.Load() }

// ErrNotHeld is returned by OpenChunk for a chunk this peer does not have.
var ErrNotHeld = errors.New("this peer does not have that chunk")

// activeKey names a fetch under way: its scope (Job.Scope) and blob.
func activeKey(scope, digest string) string { return scope + "\x00" + digest }

// OpenChunk opens a chunk of a blob this peer holds or is fetching, to be
// served to a fetch of scope (Job.Scope); done must be called after. It
// returns ErrBusy when this peer serves MaxUploads chunks already. A
// scoped fetch gets chunks of this peer's fetch of the same scope, or of
// a blob this peer holds that the scope may read (Config.Readable).
func (s *Service) OpenChunk(scope, digest string, off, size int64) (io.Reader, func(), error) {
	if !imagestore.ValidDigest(digest) {
		return nil, nil, fmt.Errorf("%q: %w", digest, imagestore.ErrBadDigest)
	}
	if off < 0 || size <= 0 || size > MaxChunk {
		return nil, nil, fmt.Errorf("a chunk is 1 to %d bytes at an offset of 0 or more", MaxChunk)
	}
	select {
	case s.slots <- struct{}{}:
	default:
		return nil, nil, ErrBusy
	}
	free := func() { <-s.slots }
	r, done, err := s.openChunk(scope, digest, off, size)
	if err != nil {
		free()
		return nil, nil, err
	}
	s.served.Add(size)
	if s.cfg.CorruptServed {
		r = &corrupting{r: r}
	}
	return r, func() { done(); free() }, nil
}

func (s *Service) openChunk(scope, digest string, off, size int64) (io.Reader, func(), error) {
	if scope == "" || s.cfg.Readable != nil && s.cfg.Readable(scope, digest) {
		if f, err := s.cfg.Store.Open(digest); err == nil {
			st, err := f.Stat()
			if err != nil || off+size > st.Size() {
				f.Close()
				return nil, nil, fmt.Errorf("%w: %d bytes at %d of a blob", ErrNotHeld, size, off)
			}
			return io.NewSectionReader(f, off, size), func() { f.Close() }, nil
		}
	}
	s.mu.Lock()
	a := s.active[activeKey(scope, digest)]
	if a != nil && a.run == nil {
		a = nil // not started yet
	}
	s.mu.Unlock()
	if a == nil {
		return nil, nil, ErrNotHeld
	}
	i, ok := a.idx[off]
	if !ok || a.run.job.Plan.Chunks[i].Size != size || !a.run.Has(i) {
		return nil, nil, ErrNotHeld
	}
	a.rw.RLock()
	if a.gone {
		a.rw.RUnlock()
		return nil, nil, ErrNotHeld
	}
	return io.NewSectionReader(a.file, off, size), a.rw.RUnlock, nil
}

// corrupting flips the first byte it reads (CorruptServed).
type corrupting struct {
	r    io.Reader
	done bool
}

func (c *corrupting) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && !c.done {
		p[0] ^= 0xff
		c.done = true
	}
	return n, err
}

// Received is how many bytes of digest the fetch under way here has
// written (0 when none is under way).
func (s *Service) Received(digest string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, a := range s.active {
		if a.digest == digest && a.run != nil {
			n = max(n, a.run.done.Load())
		}
	}
	return n
}

// Plan returns the plan of a blob this peer holds: the chunk index kept
// with it, else one cut now (and kept).
func (s *Service) Plan(ctx context.Context, digest string) (Plan, error) {
	if !s.cfg.Store.Has(digest) {
		return Plan{}, ErrNotHeld
	}
	if cs, err := s.cfg.Store.LoadChunks(digest); err == nil {
		p := Plan{Digest: digest, Chunks: cs}
		if fi, err := os.Stat(s.cfg.Store.Path(digest)); err == nil {
			p.Size = fi.Size()
		}
		if p.Validate() == nil {
			return p, nil
		}
	}
	s.mu.Lock()
	c, ok := s.cuts[digest]
	if !ok {
		c = &cutting{done: make(chan struct{})}
		s.cuts[digest] = c
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			c.plan, c.err = Cut(cctx, s.cfg.Store.Path(digest), digest)
			if c.err == nil {
				if err := s.cfg.Store.SaveChunks(digest, c.plan.Chunks); err != nil {
					s.cfg.Log.Warn("keep the chunk plan", "digest", digest, "err", err)
				}
			}
			s.mu.Lock()
			delete(s.cuts, digest)
			s.mu.Unlock()
			close(c.done)
		}()
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.plan, c.err
	case <-ctx.Done():
		return Plan{}, ctx.Err()
	}
}
