package node

import (
	"context"
	"time"
)

// leaderRun is one term's leader work in flight.
type leaderRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (p *Peer) startLead() *leaderRun {
	ctx, cancel := context.WithCancel(p.ctx)
	r := &leaderRun{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		p.lead(ctx)
	}()
	return r
}

// leaderLoop runs the leader's work while this peer leads.
func (p *Peer) leaderLoop() {
	var run *leaderRun
	stop := func() {
		if run != nil {
			run.cancel()
			<-run.done
			run = nil
		}
	}
	defer stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case isLeader := <-p.store.LeaderCh():
			if isLeader && run == nil {
				run = p.startLead()
			} else if !isLeader {
				stop()
			}
		}
	}
}

// lead is this peer's work as leader for a term: apply the term's barrier,
// then hand over to the leader's loops (package leader).
func (p *Peer) lead(ctx context.Context) {
	since := time.Now()
	defer func() {
		p.mu.Lock()
		if p.leaderReady {
			p.leaderReady, p.leaderReadyCh = false, make(chan struct{})
		}
		p.mu.Unlock()
	}()
	log := p.cfg.Log.With("part", "leader")
	log.Info("became leader")
	// Make sure every earlier entry is applied before reading the state; keep
	// trying for as long as this term lasts.
	for {
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := p.store.Barrier(bctx)
		cancel()
		if err == nil {
			break
		}
		log.Warn("barrier failed, retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(p.cfg.ReconcileInterval):
		}
	}
	p.mu.Lock()
	p.leaderReady = true
	close(p.leaderReadyCh)
	p.mu.Unlock()
	p.caught.Mark("leads and applied its term's barrier")
	pools := make(chan struct{})
	go func() {
		defer close(pools)
		p.pools.Run(ctx)
	}()
	p.leader.Run(ctx, since)
	<-pools
}
