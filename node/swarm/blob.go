package swarm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/svc-project/svc/imagestore"
)

// Blob is a blob to get from the peers that hold it (Seeds).
type Blob struct {
	Digest string
	Size   int64
	Seeds  []string
	// Check vets the whole blob before it is kept (as an upload is).
	Check imagestore.Check
}

// ErrRefused is wrapped when Check refuses the blob.
var ErrRefused = errors.New("the blob was refused")

// FetchBlob makes sure this peer holds b: its chunks come from the seeds
// and from every peer fetching it too, into the store's partial disk of
// it; the whole blob is checked against its digest and with Check before
// it is committed. Concurrent fetches of one blob on this peer share one.
// The blob is leased to the caller (release it once the cluster records
// that this peer holds it); a caller that found it here gets no lease.
func (s *Service) FetchBlob(ctx context.Context, b Blob) (*imagestore.Lease, error) {
	for {
		if s.cfg.Store.Has(b.Digest) {
			return nil, nil
		}
		s.mu.Lock()
		a := s.active[activeKey("", b.Digest)]
		s.mu.Unlock()
		if a == nil {
			break
		}
		select {
		case <-a.done:
			if a.err != nil {
				return nil, a.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if len(b.Seeds) == 0 {
		return nil, fmt.Errorf("fetch %s: no peer holds it", b.Digest)
	}
	plan, err := s.planFrom(ctx, b.Digest, b.Size, b.Seeds)
	if err != nil {
		return nil, err
	}
	b.Size = plan.Size
	part, err := s.cfg.Store.OpenPartial(b.Digest, b.Size)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", b.Digest, err)
	}
	a, err := s.start("", plan, part)
	if err != nil {
		part.Close()
		return nil, err
	}
	l, err := s.fetchInto(ctx, a, b, plan, part)
	s.end(a, err)
	return l, err
}

// fetchInto fetches b into part, stages, checks and commits it.
func (s *Service) fetchInto(ctx context.Context, a *active, b Blob, plan Plan, part *imagestore.Partial) (*imagestore.Lease, error) {
	start := time.Now()
	finder := s.cfg.Store.Chunks()
	local := func(c Chunk, buf []byte) bool { return finder.ReadChunk(c.Digest, buf) }
	res, err := s.run(ctx, a, Job{Plan: plan, Disk: part, Seeds: b.Seeds, Local: local, StayListed: true})
	if err != nil {
		part.Close() // kept: the next fetch of this blob goes on from here
		return nil, fmt.Errorf("fetch %s: %w", b.Digest, err)
	}
	st, err := part.Stage(ctx)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", b.Digest, err)
	}
	defer st.Discard()
	if st.Digest != b.Digest {
		return nil, fmt.Errorf("fetch %s: got %s: %w", b.Digest, st.Digest, imagestore.ErrDigestMismatch)
	}
	if b.Check != nil {
		if err := b.Check(ctx, st.Path()); err != nil {
			return nil, fmt.Errorf("fetch %s: %w: %w", b.Digest, ErrRefused, err)
		}
	}
	l, err := st.Commit()
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Store.SaveChunks(b.Digest, plan.Chunks); err != nil {
		s.cfg.Log.Warn("keep the chunk plan", "digest", b.Digest, "err", err)
	}
	go s.seed(plan) // served from the store now
	s.cfg.Log.Info("fetched a blob from the swarm", "digest", b.Digest, "bytes", b.Size, "took", time.Since(start).Round(time.Millisecond),
		"from_peers", res.FromPeers, "from_origin", res.FromOrigin, "local", res.Local, "resumed", res.Resumed, "dropped", res.Dropped)
	return l, nil
}

// Pull runs a registry pull's chunks through the swarm of scope (the
// namespace it pulls for, Job.Scope): plan is the disk's chunks as its
// manifest lists them, origin reads one from the registry (only when no
// peer has it and the tracker granted it), disk the pull's partial disk,
// seeds peers holding a blob of plan's digest that scope may read. The
// caller stages and checks the disk.
func (s *Service) Pull(ctx context.Context, scope string, plan Plan, disk *imagestore.Partial, seeds []string,
	origin func(ctx context.Context, c Chunk, buf []byte) error, local func(Chunk, []byte) bool, progress func(done, total int64),
) (Result, error) {
	a, err := s.start(scope, plan, disk)
	if err != nil {
		return Result{}, err
	}
	res, err := s.run(ctx, a, Job{Plan: plan, Scope: scope, Disk: disk, Seeds: seeds, Origin: origin, Local: local, Progress: progress})
	a.stopServing()
	s.end(a, err)
	return res, err
}

// start registers a fetch under way, whose chunks are served once written.
func (s *Service) start(scope string, plan Plan, disk *imagestore.Partial) (*active, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := activeKey(scope, plan.Digest)
	if s.active[k] != nil {
		return nil, fmt.Errorf("fetch %s: %w", plan.Digest, imagestore.ErrPartialBusy)
	}
	// A descriptor of its own: the disk's goes when it is staged, this one
	// serves the chunks until the blob is committed (a rename keeps it).
	f, err := os.Open(disk.File().Name())
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", plan.Digest, err)
	}
	a := &active{key: k, digest: plan.Digest, idx: plan.index(), file: f, done: make(chan struct{})}
	s.active[k] = a
	return a, nil
}

func (s *Service) run(ctx context.Context, a *active, job Job) (Result, error) {
	job.Net, job.Workers, job.Log = httpNet{s}, s.cfg.Workers, s.cfg.Log
	r, err := newRun(job)
	if err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	a.run = r
	s.mu.Unlock()
	res, err := r.fetch(ctx)
	fromPeers := res.BytesFromPeers
	if job.Origin == nil {
		fromPeers += res.BytesFromOrigin // the origin is a peer
	}
	s.fetched.Add(fromPeers)
	s.chunks.WithLabelValues("peer").Add(float64(res.FromPeers))
	s.chunks.WithLabelValues("origin").Add(float64(res.FromOrigin))
	s.chunks.WithLabelValues("local").Add(float64(res.Local))
	s.chunks.WithLabelValues("resumed").Add(float64(res.Resumed))
	s.dropped.Add(float64(len(res.Dropped)))
	return res, err
}

// stopServing waits for the chunks being served from a's disk and serves
// no more: the disk may be moved after.
func (a *active) stopServing() {
	a.rw.Lock()
	a.gone = true
	a.rw.Unlock()
}

// end forgets a fetch and wakes those waiting for it.
func (s *Service) end(a *active, err error) {
	a.stopServing()
	_ = a.file.Close()
	s.mu.Lock()
	delete(s.active, a.key)
	s.mu.Unlock()
	a.err = err
	close(a.done)
}

// seedFor bounds how long a peer that completed a blob stays listed at the
// tracker while others still fetch it.
const seedFor = 2 * time.Minute

// seed keeps this peer listed at the tracker with every chunk of plan while
// other peers fetch it (at most seedFor), then leaves: the chunks it read
// from the origin reach the others from it, not from the origin again.
func (s *Service) seed(plan Plan) {
	ctx, cancel := context.WithTimeout(s.cfg.Context, seedFor)
	defer cancel()
	all := NewBits(len(plan.Chunks))
	for i := range plan.Chunks {
		all.Set(i)
	}
	n, key := httpNet{s}, plan.Key()
	defer func() {
		if s.cfg.Context.Err() != nil {
			return // the peer stops
		}
		lctx, lcancel := context.WithTimeout(s.cfg.Context, 2*time.Second)
		defer lcancel()
		_, _ = n.Announce(lctx, key, Announce{Chunks: len(plan.Chunks), Have: all, Leave: true})
	}()
	if len(plan.Chunks) == 0 {
		return
	}
	t := time.NewTicker(announceEvery)
	defer t.Stop()
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := n.Announce(actx, key, Announce{Chunks: len(plan.Chunks), Have: all})
		acancel()
		if err == nil && len(r.Peers) == 0 {
			return // nobody else fetches it
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
