package runnerpool

import "time"

// Back-off of a pool whose starts fail (quota reached, no node with room,
// GitHub refusing or unreachable): each failure doubles the wait before
// the pool claims another job, from backoffFirst to backoffMost, with
// jitter (half the wait, at random); a runner started, or a job's VM gone
// (room made), ends it (internal/backoff, by "namespace/pool").
const (
	backoffFirst = time.Second
	backoffMost  = time.Minute
)
