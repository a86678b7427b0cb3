package node

import (
	"context"
	"time"
)

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
