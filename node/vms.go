package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/svc-project/svc/imagestore"
	"github.com/svc-project/svc/imagestore/diskcheck"
	"github.com/svc-project/svc/node/swarm"
	"github.com/svc-project/svc/raftfsm"
)

// HoldBlob keeps a blob in this peer's store (a lease: no collection
// removes it) until release is called.
func (p *Peer) HoldBlob(digest string) (func(), error) {
	l, err := p.images.Lease(digest)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// EnsureBlob makes sure this peer holds a blob a VM starts from: streamed
// from a peer that holds it, else (a VM deployed from a registry reference)
// pulled from its registry and recorded as the namespace's image.
func (p *Peer) EnsureBlob(ctx context.Context, vm raftfsm.VM, digest string) error {
	b, _ := p.FSM().Blob(digest)
	if p.images.Has(digest) {
		if !slices.Contains(b.Holders, p.cfg.Name) && b.Digest != "" {
			// here but no longer recorded (its cache was freed, the file not
			// yet removed): held again, so that it stays
			if _, err := p.Apply(ctx, raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: digest, Node: p.cfg.Name}); err != nil {
				return fmt.Errorf("record blob holder: %w", err)
			}
		}
		return nil
	}
	var seeds []string
	for _, h := range b.Holders {
		if h != p.cfg.Name && p.peerURL(h) != "" {
			seeds = append(seeds, h)
		}
	}
	fromRegistry := digest == vm.ImageDigest && vm.ImageSource != ""
	if len(seeds) == 0 && !fromRegistry {
		return fmt.Errorf("image blob %s: no peer holds it", digest)
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	var ferr error
	if len(seeds) > 0 {
		var lease *imagestore.Lease
		if lease, ferr = p.fetchBlob(fctx, vm, b, seeds); ferr == nil {
			p.cfg.Log.Info("fetched image blob", "digest", digest, "bytes", b.SizeBytes, "took", time.Since(start))
			// Leased until recorded: a collection in between would take
			// the blob for one this node no longer holds.
			if _, err := p.Apply(ctx, raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: digest, Node: p.cfg.Name}); err != nil {
				p.cfg.Log.Warn("record blob holder", "digest", digest, "err", err)
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
		p.cfg.Log.Warn("no peer could send the image; pulling it from its registry", "err", ferr)
	}
	if err := p.jobs.PullVMImage(fctx, vm, digest); err != nil {
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
func (p *Peer) fetchBlob(ctx context.Context, vm raftfsm.VM, b raftfsm.Blob, seeds []string) (*imagestore.Lease, error) {
	check := blobCheck(vm, b.Digest)
	lease, err := p.swarm.FetchBlob(ctx, swarm.Blob{Digest: b.Digest, Size: b.SizeBytes, Seeds: seeds, Check: check})
	if !errors.Is(err, swarm.ErrNoPlan) {
		return lease, err
	}
	p.cfg.Log.Warn("no holder gave the chunk plan: fetching the blob whole from one", "digest", b.Digest, "err", err)
	var urls []string
	for _, s := range seeds {
		urls = append(urls, p.peerURL(s))
	}
	return nil, p.images.Fetch(ctx, p.peerHTTP, b.Digest, urls, check)
}

// BlobReceived is how many bytes of a blob the fetch under way here has
// received.
func (p *Peer) BlobReceived(digest string) int64 {
	return p.images.Received(digest) + p.swarm.Received(digest)
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

// healthLoop probes the hypervisor and gossips a problem while it does not
// answer, so that the leader marks this node NOT READY and places no VMs here.
func (p *Peer) healthLoop() {
	tick := time.NewTicker(p.cfg.HealthInterval)
	defer tick.Stop()
	for {
		p.setProblem(p.probeHypervisor())
		select {
		case <-p.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probeHypervisor returns why this node cannot take VMs ("" when it can).
func (p *Peer) probeHypervisor() string {
	if p.driver == nil {
		return "no hypervisor driver"
	}
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	if err := p.driver.Probe(ctx); err != nil {
		return "hypervisor does not answer: " + err.Error()
	}
	return p.guardGuests(ctx)
}

func (p *Peer) setProblem(problem string) {
	p.mu.Lock()
	changed := p.problem != problem
	p.problem = problem
	p.mu.Unlock()
	if !changed {
		return
	}
	if problem != "" {
		p.cfg.Log.Error("this node takes no VMs", "why", problem)
	} else {
		p.cfg.Log.Info("hypervisor answers; this node takes VMs")
	}
	r := p.report()
	r.Problem = problem
	if err := p.gossip.SetReport(r); err != nil {
		p.cfg.Log.Warn("gossip report", "err", err)
	}
}

func (p *Peer) hypervisorOK() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.driver != nil && p.problem == ""
}
