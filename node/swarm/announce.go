package swarm

import (
	"context"
	"math/rand/v2"
	"time"
)

// announcer tells the tracker what this peer has, a few times a second,
// claiming chunks to read from the origin when the workers run short.
func (r *run) announcer(ctx context.Context) {
	t := time.NewTicker(announceEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		r.announce(ctx)
	}
}

// announce is one round with the tracker.
func (r *run) announce(ctx context.Context) {
	r.mu.Lock()
	if r.left == 0 {
		r.mu.Unlock()
		return
	}
	a := Announce{Chunks: len(r.job.Plan.Chunks), Have: append(Bits(nil), r.have...), Claim: r.wantClaimsLocked()}
	for p := range r.banned {
		if len(a.Shun) < MaxListed {
			a.Shun = append(a.Shun, p)
		}
	}
	r.mu.Unlock()
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	reply, err := r.job.Net.Announce(actx, r.key, a)
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	defer r.notifyLocked()
	if err != nil {
		if !r.warned {
			r.warned = true // once a fetch: why the tracker did not answer
			r.job.Log.Warn("the tracker did not answer", "digest", r.job.Plan.Digest, "err", err)
		}
		r.failed++
		if r.failed >= aloneFailures && time.Since(r.lastAnswer) >= aloneAfter && !r.alone {
			r.alone = true
			r.job.Log.Warn("the tracker does not answer: reading every chunk from the origin", "digest", r.job.Plan.Digest, "err", err)
		}
		return
	}
	if r.alone {
		r.job.Log.Info("the tracker answers again", "digest", r.job.Plan.Digest)
	}
	r.lastAnswer, r.alone, r.failed = time.Now(), false, 0
	for p := range r.view {
		if !r.isSeed(p) {
			delete(r.view, p)
		}
	}
	for _, p := range reply.Peers {
		if len(p.Have) == len(r.have) && !r.isSeed(p.Node) {
			r.view[p.Node] = p.Have
		}
	}
	for _, i := range reply.Granted {
		if i >= 0 && i < len(r.job.Plan.Chunks) {
			r.granted[i] = true
		}
	}
}

// isSeed reports whether node holds the whole blob (listed as a peer with
// every chunk when there is an Origin).
func (r *run) isSeed(node string) bool {
	if r.job.Origin == nil {
		return false
	}
	for _, s := range r.job.Seeds {
		if s == node {
			return true
		}
	}
	return false
}

// wantClaimsLocked picks chunks to claim: missing ones that no peer has
// and that are not granted yet, at random (so that peers claim different
// ones), enough to keep the workers busy.
func (r *run) wantClaimsLocked() []int {
	pending := 0
	var free []int
	for i := range r.job.Plan.Chunks {
		if r.have.Has(i) || r.inflight[i] {
			continue
		}
		if r.granted[i] {
			pending++
			continue
		}
		held := false
		for p, b := range r.view {
			if b.Has(i) && !r.banned[p] {
				held = true
				break
			}
		}
		if !held {
			free = append(free, i)
		}
	}
	want := min(2*r.job.Workers-pending, MaxClaims, len(free))
	if want <= 0 {
		return nil
	}
	rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
	return free[:want]
}

// leave tells the tracker this peer is done with the plan (best effort).
func (r *run) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, _ = r.job.Net.Announce(ctx, r.key, Announce{Chunks: len(r.job.Plan.Chunks), Have: r.haveCopy(), Leave: true})
}

func (r *run) haveCopy() Bits {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(Bits(nil), r.have...)
}

func largest(cs []Chunk) int64 {
	var n int64
	for _, c := range cs {
		n = max(n, c.Size)
	}
	return n
}
