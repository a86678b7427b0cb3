package runnerpool

import (
	"math/rand/v2"
	"time"
)

// Back-off of a pool whose starts fail (quota reached, no node with room,
// GitHub refusing or unreachable): each failure doubles the wait before
// the pool claims another job, from backoffFirst to backoffMost, with
// jitter (half the wait, at random); a runner started, or a job's VM gone
// (room made), ends it.
const (
	backoffFirst = time.Second
	backoffMost  = time.Minute
)

// backoff is one pool's.
type backoff struct {
	fails int
	until time.Time
}

// wait returns the wait after the n-th failure in a row, with its jitter.
func backoffWait(n int) time.Duration {
	d := backoffFirst
	for i := 1; i < n && d < backoffMost; i++ {
		d *= 2
	}
	d = min(d, backoffMost)
	return d/2 + rand.N(d/2+1)
}

// failed records a failed start of the pool and returns its wait.
func (c *Controller) failed(pool string, now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.backoffs[pool]
	if b == nil {
		b = &backoff{}
		c.backoffs[pool] = b
	}
	b.fails++
	d := backoffWait(b.fails)
	b.until = now.Add(d)
	return d
}

// relieved ends the pool's back-off: a start succeeded, or room was made.
func (c *Controller) relieved(pool string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.backoffs, pool)
}

// backingOff reports whether the pool waits before its next claim.
func (c *Controller) backingOff(pool string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.backoffs[pool]
	return b != nil && now.Before(b.until)
}
