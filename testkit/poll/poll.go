package poll

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Interval is the time between two asks.
const Interval = 25 * time.Millisecond

// ErrNotYet is what a boolean condition (True) says while it does not hold.
var ErrNotYet = errors.New("not yet")

// Until calls cond every Interval until it returns nil, ctx ends or timeout
// passes; it returns nil, or cond's last error (or ctx's) with the time
// waited.
func Until(ctx context.Context, timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTimer(Interval)
	defer t.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		t.Reset(Interval)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// For fails tb when cond does not return nil within timeout, naming what
// was awaited and cond's last error.
func For(tb testing.TB, what string, timeout time.Duration, cond func() error) {
	tb.Helper()
	if err := Until(context.Background(), timeout, cond); err != nil {
		tb.Fatalf("waiting for %s: %v", what, err)
	}
}

// True makes a condition of a boolean one: ErrNotYet while it is false.
func True(cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return ErrNotYet
	}
}
