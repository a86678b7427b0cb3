package blobsource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/node/swarm"
	"github.com/svc-project/svc/raftfsm"
)

// Proposer proposes commands (through the leader).
type Proposer interface {
	Apply(ctx context.Context, t raftfsm.Type, body any) (any, error)
}

// Config configures a Source.
type Config struct {
	// Name is this node's.
	Name   string
	FSM    *raftfsm.FSM
	Images *imagestore.Store
	// Swarm fetches blobs in chunks from the peers that hold them.
	Swarm *swarm.Service
	// HTTP calls the other peers (over the fabric); PeerURL gives a peer's
	// base URL ("" when unknown).
	HTTP    *http.Client
	PeerURL func(name string) string
	// Pull pulls a VM's image from its registry and records it as the
	// namespace's image (the job manager's).
	Pull func(ctx context.Context, vm raftfsm.VM, digest string) error
	// Disk is the budget of the data dir's disk: a fetch holds room for
	// the blob, or is refused (nil: no bound).
	Disk     *diskbudget.Budget
	Proposer Proposer
	Log      *slog.Logger
}

// Source gets the blobs this node's VMs start from.
type Source struct {
	cfg Config

	mu sync.Mutex
	// inflight are the blobs being got, one getter each; the others wait
	// for it and look again.
	inflight map[string]*getting
}

// getting is a blob being got: done is closed when its getter is done.
type getting struct {
	done    chan struct{}
	waiters int
}

// New returns a Source.
func New(cfg Config) *Source {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Source{cfg: cfg, inflight: map[string]*getting{}}
}

// fetchTimeout bounds getting one blob.
const fetchTimeout = 30 * time.Minute

// HoldBlob keeps a blob in this peer's store (a lease: no collection
// removes it) until release is called.
func (s *Source) HoldBlob(digest string) (func(), error) {
	l, err := s.cfg.Images.Lease(digest)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// EnsureBlob makes sure this peer holds a blob a VM starts from: streamed
// from a peer that holds it, else (a VM deployed from a registry reference)
// pulled from its registry and recorded as the namespace's image.
//
// One caller at a time gets a given blob on this node (two VMs starting
// from one image, say): the others wait for it and then look again (the
// blob is here, or they try themselves if it failed), rather than meet
// its partial file and fail.
func (s *Source) EnsureBlob(ctx context.Context, vm raftfsm.VM, digest string) error {
	for {
		s.mu.Lock()
		g, busy := s.inflight[digest]
		if !busy {
			g = &getting{done: make(chan struct{})}
			s.inflight[digest] = g
		} else {
			g.waiters++
		}
		s.mu.Unlock()
		if !busy {
			defer func() {
				s.mu.Lock()
				delete(s.inflight, digest)
				s.mu.Unlock()
				close(g.done)
			}()
			return s.ensure(ctx, vm, digest)
		}
		select {
		case <-g.done:
		case <-ctx.Done():
			return fmt.Errorf("waiting for another fetch of %s: %w", digest, ctx.Err())
		}
	}
}

// waiting is how many callers wait for digest's getter (tests).
func (s *Source) waiting(digest string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.inflight[digest]; ok {
		return g.waiters
	}
	return 0
}

// ensure is EnsureBlob for its one caller of digest.
//
// A VM deployed from a registry reference names the digest the registry
// claims. Unless an image or ISO of the VM's namespace already has that
// content, the disk is pulled from the registry and hashed here, even when
// this peer or another holds a blob of that digest: a digest names bytes,
// not who may read them.
func (s *Source) ensure(ctx context.Context, vm raftfsm.VM, digest string) error {
	fromRegistry := digest == vm.ImageDigest && vm.ImageSource != ""
	if fromRegistry && !s.cfg.FSM.NamespaceHolds(vm.Namespace, digest) {
		fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
		defer cancel()
		return s.cfg.Pull(fctx, vm, digest)
	}
	b, _ := s.cfg.FSM.Blob(digest)
	if s.cfg.Images.Has(digest) {
		if !slices.Contains(b.Holders, s.cfg.Name) && b.Digest != "" {
			// here but no longer recorded (its cache was freed, the file not
			// yet removed): held again, so that it stays
			if err := s.recordHolder(ctx, digest); err != nil {
				return fmt.Errorf("record blob holder: %w", err)
			}
		}
		return nil
	}
	var seeds []string
	for _, h := range b.Holders {
		if h != s.cfg.Name && s.cfg.PeerURL(h) != "" {
			seeds = append(seeds, h)
		}
	}
	if len(seeds) == 0 && !fromRegistry {
		return fmt.Errorf("image blob %s: no peer holds it", digest)
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	var ferr error
	if len(seeds) > 0 {
		hold, err := s.cfg.Disk.Reserve("image blob "+digest, b.SizeBytes, s.cfg.Images.PartialPath(digest))
		if err != nil {
			return err
		}
		defer hold.Release()
		var lease *imagestore.Lease
		if lease, ferr = s.fetchBlob(fctx, vm, b, seeds); ferr == nil {
			s.cfg.Log.Info("fetched image blob", "digest", digest, "bytes", b.SizeBytes, "took", time.Since(start))
			// Leased until recorded: a collection in between would take
			// the blob for one this node no longer holds.
			if err := s.recordHolder(ctx, digest); err != nil {
				s.cfg.Log.Warn("record blob holder", "digest", digest, "err", err)
			}
			if lease != nil {
				lease.Release()
			}
			return nil
		}
		ferr = fmt.Errorf("image %s from %s: %w", digest, strings.Join(b.Holders, ","), ferr)
		if !fromRegistry || errors.Is(ferr, diskcheck.ErrRefused) {
			return ferr
		}
		s.cfg.Log.Warn("no peer could send the image; pulling it from its registry", "err", ferr)
	}
	if err := s.cfg.Pull(fctx, vm, digest); err != nil {
		if errors.Is(err, diskcheck.ErrRefused) {
			return err
		}
		return errors.Join(ferr, err)
	}
	return nil
}

// fetchBlob gets a blob from the peers: in chunks from every peer that
// has some (node/swarm), or whole from one holder when no holder tells
// how the blob is cut (a peer of an earlier release).
func (s *Source) fetchBlob(ctx context.Context, vm raftfsm.VM, b raftfsm.Blob, seeds []string) (*imagestore.Lease, error) {
	check := blobCheck(vm, b.Digest)
	lease, err := s.cfg.Swarm.FetchBlob(ctx, swarm.Blob{Digest: b.Digest, Size: b.SizeBytes, Seeds: seeds, Check: check})
	if !errors.Is(err, swarm.ErrNoPlan) {
		return lease, err
	}
	s.cfg.Log.Warn("no holder gave the chunk plan: fetching the blob whole from one", "digest", b.Digest, "err", err)
	var urls []string
	for _, seed := range seeds {
		urls = append(urls, s.cfg.PeerURL(seed))
	}
	return nil, s.cfg.Images.Fetch(ctx, s.cfg.HTTP, b.Digest, urls, check)
}

// BlobReceived is how many bytes of a blob the fetch under way here has
// received.
func (s *Source) BlobReceived(digest string) int64 {
	return s.cfg.Images.Received(digest) + s.cfg.Swarm.Received(digest)
}

// maxNVRAM bounds a macOS image's NVRAM (auxiliary storage: 32 MiB as
// the framework makes it).
const maxNVRAM = 64 << 20

// blobCheck vets a blob fetched from a peer for what the VM uses it as:
// its disk (of the format its image is recorded as) or its ISO. A peer
// checks a blob it receives as if a user had uploaded it.
func blobCheck(vm raftfsm.VM, digest string) imagestore.Check {
	if digest == vm.ISODigest && digest != vm.ImageDigest {
		return func(_ context.Context, path string) error {
			if vm.OS == raftfsm.OSMacOS {
				if _, err := diskcheck.IPSW(path); err == nil {
					return nil
				}
			}
			_, err := diskcheck.ISO(path)
			return err
		}
	}
	if digest == vm.NVRAMDigest && digest != vm.ImageDigest {
		return func(_ context.Context, path string) error {
			if st, err := os.Stat(path); err != nil || st.Size() > maxNVRAM {
				return fmt.Errorf("an NVRAM blob is at most %d bytes", maxNVRAM)
			}
			return nil
		}
	}
	return func(ctx context.Context, path string) error {
		_, err := diskcheck.Disk(ctx, path, vm.ImageFormat)
		return err
	}
}

// recordAttempts bounds the sends of a holder record whose fate is unknown.
const recordAttempts = 5

// recordHolder records this node as a holder of digest. A write whose fate
// is unknown (the leader lost its leadership while committing it, a timeout,
// no answer) is sent again, as adding a holder twice changes nothing, until
// it is applied or refused for certain, at most recordAttempts times: its
// caller releases the blob's lease after it, and a blob released before its
// record is in may be collected as one this node no longer holds while the
// record lands after all (seen under an election in CI: listed, no file).
func (s *Source) recordHolder(ctx context.Context, digest string) error {
	var err error
	for attempt := range recordAttempts {
		_, err = s.cfg.Proposer.Apply(ctx, raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: digest, Node: s.cfg.Name})
		var r imagestore.Refusal
		if err == nil || errors.As(err, &r) && r.Refusal() {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	return err
}
