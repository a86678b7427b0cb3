package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// specFor turns a VM of the replicated state into a hypervisor spec.
func (p *Peer) specFor(vm raftfsm.VM, name string) hypervisor.Spec {
	fwd := []hypervisor.Forward{{HostPort: vm.SSHPort, GuestPort: 22}, {HostPort: vm.ScreensharePort, GuestPort: 5900}}
	for _, r := range vm.ReservedPorts {
		fwd = append(fwd, hypervisor.Forward{HostPort: r.Host, GuestPort: r.Guest})
	}
	iso := ""
	if vm.ISODigest != "" {
		iso = p.images.Path(vm.ISODigest)
	}
	return hypervisor.Spec{
		Name: name, CPU: vm.CPU, MemoryMiB: vm.MemoryBytes >> 20, ISO: iso,
		BaseImage: p.images.Path(vm.ImageDigest), BaseFormat: vm.ImageFormat,
		LegacyIO: vm.LegacyIO, ListenAddr: p.cfg.Bind, VNCPort: vm.VNCPort, VNCPassword: vm.VNCPassword, Forwards: fwd,
	}
}

// ensureBlob makes sure this peer holds an image blob, streaming it from a
// peer that holds it, and records the new copy.
func (p *Peer) ensureBlob(ctx context.Context, digest string) error {
	if p.images.Has(digest) {
		return nil
	}
	b, ok := p.FSM().Blob(digest)
	if !ok {
		return fmt.Errorf("image blob %s is unknown to the cluster", digest)
	}
	var sources []string
	for _, h := range b.Holders {
		if h == p.cfg.Name {
			continue
		}
		if addr := p.apiAddrOf(h); addr != "" {
			sources = append(sources, "http://"+addr)
		}
	}
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	if err := p.images.Fetch(fctx, p.peerHTTP, digest, sources); err != nil {
		return fmt.Errorf("image %s from %s: %w", digest, strings.Join(b.Holders, ","), err)
	}
	p.cfg.Log.Info("fetched image blob", "digest", digest, "bytes", b.SizeBytes, "took", time.Since(start))
	if _, err := p.Apply(ctx, raftfsm.TypeBlobAddHolder, raftfsm.BlobAddHolder{Digest: digest, Node: p.cfg.Name}); err != nil {
		p.cfg.Log.Warn("record blob holder", "digest", digest, "err", err)
	}
	return nil
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
	return ""
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
