package hypervisor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// agentRetry is how often a call is tried again while a guest's agent
// does not answer yet (after a restore it reconnects within a few hundred
// milliseconds, and a VM waits for it before it is Running).
const agentRetry = 20 * time.Millisecond

// SyncGuestClock sets a guest's clock to the host's through its agent,
// trying again for up to within while the agent does not answer yet (its
// channel reconnects after a restore; within 0: one try). A driver without
// the GuestAgent role, or a guest whose agent never answers, is ErrNoAgent.
func SyncGuestClock(ctx context.Context, d Driver, name string, within time.Duration) error {
	ag, ok := d.(GuestAgent)
	if !ok {
		return fmt.Errorf("%s: %w (the hypervisor has no guest agent channel)", name, ErrNoAgent)
	}
	if within == 0 {
		return ag.SetGuestTime(ctx, name)
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(agentRetry)
	defer tick.Stop()
	for {
		err := ag.SetGuestTime(ctx, name)
		if err == nil || !errors.Is(err, ErrNoAgent) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-tick.C:
		}
	}
}
