package swarm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/svc-project/svc/imagestore/ocidisk"
)

// Fetch timings and bounds.
const (
	// announceEvery spaces a fetch's announcements to the tracker.
	announceEvery = 250 * time.Millisecond
	// busyFor is how long a peer that answered "busy" is not asked again.
	busyFor = 300 * time.Millisecond
	// failedFor is how long a peer whose answer failed is not asked again.
	failedFor = 500 * time.Millisecond
	// maxAttempts bounds the tries of one chunk (from any source).
	maxAttempts = 8
	// aloneAfter is how long without an answer from the tracker makes a
	// fetch go on without it (every chunk from the origin), once
	// aloneFailures announcements in a row failed: longer than an
	// election, so that a change of leader does not send every fetch to
	// the origin; and more than one slow call, so that one answer late on
	// a starved machine does not either.
	aloneAfter    = 5 * time.Second
	aloneFailures = 4
	// unreachableAfter is how many failed reads make a fetch stop asking
	// a peer (as if it served a bad chunk, without saying so).
	unreachableAfter = 3
	// chunkTimeout bounds the read of one chunk from one source.
	chunkTimeout = 2 * time.Minute
)

// ErrBusy is returned by Net.Chunk when the peer serves as many chunks as
// it may at once.
var ErrBusy = errors.New("the peer serves as many chunks as it may")

// ErrBadChunk is wrapped when a chunk does not hash to its digest.
var ErrBadChunk = errors.New("the chunk does not match its digest")

// Disk is what a fetch writes into (imagestore.Partial): a file of the
// blob's size whose unwritten ranges read as zeros, and a journal of the
// chunks written whole.
type Disk interface {
	File() *os.File
	Written(off, size int64) bool
	Clear(off, size int64) error
	Wrote(off, size int64) error
}

// Net is how a fetch reaches the other peers.
type Net interface {
	// Chunk reads chunk c of blob digest from node into buf (len c.Size),
	// for a fetch of scope (Job.Scope).
	Chunk(ctx context.Context, node, scope, digest string, c Chunk, buf []byte) error
	// Announce tells the tracker what this peer has of plan key.
	Announce(ctx context.Context, key string, a Announce) (Reply, error)
}

// Job is one blob to fetch.
type Job struct {
	Plan Plan
	// Scope is "" for a blob the cluster has recorded (every chunk of it
	// may come from any peer that holds it), or the namespace a registry
	// pull is for: its swarm is that namespace's pulls alone, and a peer
	// serves it from a blob it holds only when the namespace may read that
	// blob (Config.Readable), since the digests a registry claims prove
	// nothing until the whole disk is hashed.
	Scope string
	Disk  Disk
	// Seeds hold the whole blob. Without an Origin they are the origin
	// (read only for chunks claimed at the tracker); with one, peers like
	// any other.
	Seeds []string
	// Origin reads a chunk from outside the cluster (a registry).
	Origin func(ctx context.Context, c Chunk, buf []byte) error
	// Local fills buf with a chunk this peer holds in another blob.
	Local func(c Chunk, buf []byte) bool
	Net   Net
	// Workers is how many chunks are fetched at once (default 4).
	Workers int
	// Progress is told the bytes written so far (and the total).
	Progress func(done, total int64)
	// StayListed keeps this peer listed at the tracker when the fetch
	// succeeds: the caller goes on serving the blob and leaves later
	// (Service.seed), so that the chunks only it had are not read from
	// the origin again.
	StayListed bool
	Log        *slog.Logger
}

// Result counts where the chunks came from.
type Result struct {
	FromPeers, FromOrigin, Local, Resumed int
	BytesFromPeers, BytesFromOrigin       int64
	// Dropped are the peers that served a bad chunk.
	Dropped []string
}

// run is one fetch under way.
type run struct {
	job   Job
	key   string
	total int64

	mu         sync.Mutex
	have       Bits
	left       int // chunks not had yet
	inflight   map[int]bool
	granted    map[int]bool
	tries      []int
	view       map[string]Bits // other fetching peers (and seeds with an Origin)
	banned     map[string]bool
	resting    map[string]time.Time // peers not to ask until then
	failures   map[string]int       // failed reads per peer
	alone      bool
	failed     int           // announcements failed in a row
	lastAnswer time.Time     // the tracker's last answer (or the fetch's start)
	warned     bool          // a failed announcement was logged
	changed    chan struct{} // closed when what may be picked changed
	res        Result
	done       atomic.Int64
}

// Run fetches job's chunks into its disk; the caller checks the whole
// blob. Chunks the disk or Local has are not fetched.
func Run(ctx context.Context, job Job) (Result, error) {
	r, err := newRun(job)
	if err != nil {
		return Result{}, err
	}
	return r.fetch(ctx)
}

func newRun(job Job) (*run, error) {
	if err := job.Plan.Validate(); err != nil {
		return nil, err
	}
	if job.Workers <= 0 {
		job.Workers = 4
	}
	if job.Log == nil {
		job.Log = slog.New(slog.DiscardHandler)
	}
	if job.Origin == nil && len(job.Seeds) == 0 {
		return nil, errors.New("no origin and no peer holding the blob")
	}
	n := len(job.Plan.Chunks)
	r := &run{
		job: job, key: ScopedKey(job.Scope, job.Plan.Key()), total: job.Plan.Size, have: NewBits(n), left: n,
		inflight: map[int]bool{}, granted: map[int]bool{}, tries: make([]int, n), view: map[string]Bits{},
		banned: map[string]bool{}, resting: map[string]time.Time{}, failures: map[string]int{}, changed: make(chan struct{}),
		lastAnswer: time.Now(),
	}
	if job.Origin != nil {
		for _, s := range job.Seeds {
			all := NewBits(n)
			for i := range n {
				all.Set(i)
			}
			r.view[s] = all
		}
	}
	return r, nil
}

// fetch runs the fetch to its end.
func (r *run) fetch(ctx context.Context) (Result, error) {
	job, n := r.job, len(r.job.Plan.Chunks)
	if err := r.fromDisk(); err != nil {
		return r.result(), err
	}
	if r.left == 0 || n == 0 {
		return r.result(), nil
	}
	actx, stopAnnouncing := context.WithCancel(ctx)
	defer stopAnnouncing()
	r.announce(actx) // the first word before any chunk is picked
	go r.announcer(actx)
	errc := make(chan error, job.Workers)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range job.Workers {
		go func() { errc <- r.worker(wctx) }()
	}
	var errs []error
	for range job.Workers {
		if err := <-errc; err != nil {
			errs = append(errs, err)
			cancel()
		}
	}
	stopAnnouncing()
	if len(errs) > 0 || !job.StayListed {
		r.leave()
	}
	return r.result(), errors.Join(errs...)
}

func (r *run) result() Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.res
}

// fromDisk takes the chunks an earlier, interrupted fetch wrote, and those
// this peer holds in other blobs.
func (r *run) fromDisk() error {
	var buf []byte
	for i, c := range r.job.Plan.Chunks {
		if r.job.Disk.Written(c.Offset, c.Size) {
			r.res.Resumed++
			r.gotLocked(i)
			continue
		}
		if r.job.Local == nil {
			continue
		}
		if int64(cap(buf)) < c.Size {
			buf = make([]byte, c.Size)
		}
		if r.job.Local(c, buf[:c.Size]) {
			if err := r.write(c, buf[:c.Size]); err != nil {
				return err
			}
			r.res.Local++
			r.gotLocked(i)
		}
	}
	return nil
}

// gotLocked records chunk i as had (r.mu held, or no other goroutine yet).
func (r *run) gotLocked(i int) {
	if r.have.Has(i) {
		return
	}
	r.have.Set(i)
	r.left--
	d := r.done.Add(r.job.Plan.Chunks[i].Size)
	if r.job.Progress != nil {
		r.job.Progress(d, r.total)
	}
}

// Has reports whether chunk i is written (a peer may be sent it).
func (r *run) Has(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.have.Has(i)
}

// notifyLocked wakes the workers waiting for something to pick.
func (r *run) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

// worker fetches chunks until none is left.
func (r *run) worker(ctx context.Context) error {
	buf := make([]byte, largest(r.job.Plan.Chunks))
	for {
		i, src, wait, err := r.pick()
		if err != nil {
			return err
		}
		if i < 0 && wait == nil {
			return nil
		}
		if wait != nil {
			t := time.NewTimer(announceEvery)
			select {
			case <-wait:
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
			t.Stop()
			continue
		}
		c := r.job.Plan.Chunks[i]
		from, err := r.get(ctx, src, c, buf[:c.Size])
		if err == nil {
			if err := r.write(c, buf[:c.Size]); err != nil {
				r.release(i)
				return err
			}
		}
		if err := r.settle(ctx, i, src, from, err); err != nil {
			return err
		}
	}
}

// originName stands for the origin in a pick.
const originName = ""

// pick chooses the next chunk and where to read it: the rarest chunk some
// peer has, else a chunk the tracker granted this peer to read from the
// origin. With nothing to pick it returns a channel closed when that may
// change; with nothing left, i < 0 and no channel.
func (r *run) pick() (i int, src string, wait <-chan struct{}, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.left == 0 {
		return -1, "", nil, nil
	}
	now := time.Now()
	best, bestN, ties := -1, 0, 0
	for j := range r.job.Plan.Chunks {
		if r.have.Has(j) || r.inflight[j] {
			continue
		}
		n := 0
		for p, b := range r.view {
			if b.Has(j) && !r.banned[p] && !now.Before(r.resting[p]) {
				n++
			}
		}
		switch {
		case n == 0:
		case best < 0 || n < bestN:
			best, bestN, ties = j, n, 1
		case n == bestN:
			ties++
			if rand.IntN(ties) == 0 {
				best = j
			}
		}
	}
	if best >= 0 {
		var from []string
		for p, b := range r.view {
			if b.Has(best) && !r.banned[p] && !now.Before(r.resting[p]) {
				from = append(from, p)
			}
		}
		r.inflight[best] = true
		return best, from[rand.IntN(len(from))], nil, nil
	}
	for j := range r.job.Plan.Chunks {
		if r.have.Has(j) || r.inflight[j] || !r.granted[j] && !r.alone {
			continue
		}
		if r.job.Origin == nil && r.seedLocked(now) == "" {
			if r.allSeedsBannedLocked() {
				return -1, "", nil, errors.New("no peer holding the blob may be asked: each served a bad chunk or failed too often")
			}
			break // the seeds rest a moment
		}
		r.inflight[j] = true
		return j, originName, nil, nil
	}
	return -1, "", r.changed, nil
}

// seedLocked picks a seed to read an origin chunk from ("" when none may
// be asked now).
func (r *run) seedLocked(now time.Time) string {
	var ok []string
	for _, s := range r.job.Seeds {
		if !r.banned[s] && !now.Before(r.resting[s]) {
			ok = append(ok, s)
		}
	}
	if len(ok) == 0 {
		return ""
	}
	return ok[rand.IntN(len(ok))]
}

func (r *run) allSeedsBannedLocked() bool {
	for _, s := range r.job.Seeds {
		if !r.banned[s] {
			return false
		}
	}
	return true
}

// get reads chunk c from src (a peer, or the origin: a seed or Origin)
// into buf and checks it. It returns the peer the bytes came from ("" for
// Origin).
func (r *run) get(ctx context.Context, src string, c Chunk, buf []byte) (string, error) {
	from := src
	if src == originName && r.job.Origin == nil {
		r.mu.Lock()
		from = r.seedLocked(time.Now())
		r.mu.Unlock()
		if from == "" {
			return "", fmt.Errorf("%w: no peer holding the blob may be asked now", ErrBusy)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, chunkTimeout)
	defer cancel()
	var err error
	if from == originName {
		err = r.job.Origin(ctx, c, buf)
	} else {
		err = r.job.Net.Chunk(ctx, from, r.job.Scope, r.job.Plan.Digest, c, buf)
	}
	if err == nil && !matches(c, buf) {
		err = fmt.Errorf("%w: chunk at %d from %s", ErrBadChunk, c.Offset, nameOf(from))
	}
	return from, err
}

func nameOf(src string) string {
	if src == originName {
		return "the origin"
	}
	return "peer " + src
}

func matches(c Chunk, buf []byte) bool {
	sum := sha256.Sum256(buf)
	return "sha256:"+hex.EncodeToString(sum[:]) == c.Digest
}

// settle records how the fetch of chunk i from src (originName: the
// origin) ended; it fails the fetch only when the chunk failed too often.
func (r *run) settle(ctx context.Context, i int, src, from string, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.inflight, i)
	defer r.notifyLocked()
	c := r.job.Plan.Chunks[i]
	if err == nil {
		if src == originName {
			r.res.FromOrigin++
			r.res.BytesFromOrigin += c.Size
		} else {
			r.res.FromPeers++
			r.res.BytesFromPeers += c.Size
		}
		r.gotLocked(i)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	now := time.Now()
	switch {
	case errors.Is(err, ErrBadChunk) && from != originName:
		if !r.banned[from] {
			r.banned[from] = true
			r.res.Dropped = append(r.res.Dropped, from)
			r.job.Log.Warn("a peer served a bad chunk: it is not asked again for this blob", "peer", from, "digest", r.job.Plan.Digest, "offset", c.Offset)
		}
	case errors.Is(err, ErrBusy):
		if from != originName {
			r.resting[from] = now.Add(busyFor)
		}
		return nil // not a failed try
	case from != originName:
		r.resting[from] = now.Add(failedFor)
		if r.failures[from]++; r.failures[from] >= unreachableAfter && !r.banned[from] {
			r.banned[from] = true // shunned at the tracker: its chunks come from elsewhere
			r.job.Log.Warn("a peer failed to send chunks: it is not asked again for this blob", "peer", from, "digest", r.job.Plan.Digest, "err", err)
		}
	}
	r.tries[i]++
	r.job.Log.Debug("a chunk failed", "digest", r.job.Plan.Digest, "offset", c.Offset, "from", nameOf(from), "try", r.tries[i], "err", err)
	if r.tries[i] >= maxAttempts {
		return fmt.Errorf("chunk at %d: %d tries, the last: %w", c.Offset, r.tries[i], err)
	}
	return nil
}

// write puts chunk c's bytes in the disk, sparse, and journals it.
func (r *run) write(c Chunk, b []byte) error {
	d := r.job.Disk
	if err := d.Clear(c.Offset, c.Size); err != nil {
		return err
	}
	if err := ocidisk.WriteSparse(d.File(), b, c.Offset); err != nil {
		return err
	}
	return d.Wrote(c.Offset, c.Size)
}

// release puts chunk i back among those to pick.
func (r *run) release(i int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.inflight, i)
	r.notifyLocked()
}
