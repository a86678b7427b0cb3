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
	var sources []string
	for _, h := range b.Holders {
		if h == p.cfg.Name {
			continue
		}
		if url := p.peerURL(h); url != "" {
			sources = append(sources, url)
		}
	}
	fromRegistry := digest == vm.ImageDigest && vm.ImageSource != ""
	if len(sources) == 0 && !fromRegistry {
		return fmt.Errorf("image blob %s: no peer holds it", digest)
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	var ferr error
	if len(sources) > 0 {
		if ferr = p.images.Fetch(fctx, p.peerHTTP, digest, sources, blobCheck(vm, digest)); ferr == nil {
			p.cfg.Log.Info("fetched image blob", "digest", digest, "bytes", b.SizeBytes, "took", time.Since(start))
			if _, err := p.Apply(ctx, raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: digest, Node: p.cfg.Name}); err != nil {
				p.cfg.Log.Warn("record blob holder", "digest", digest, "err", err)
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
