package poll

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	errBusy := errors.New("busy")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		holdsAt int32 // the call from which cond holds (0: never)
		timeout time.Duration
		want    error // nil, or what the error wraps
		says    string
	}{
		{"holds at once", context.Background(), 1, time.Second, nil, ""},
		{"holds on the fifth ask", context.Background(), 5, 10 * time.Second, nil, ""},
		{"never holds", context.Background(), 0, 50 * time.Millisecond, errBusy, "after 50ms: busy"},
		{"the context ends", cancelled, 0, time.Hour, context.Canceled, "(last: busy)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			err := Until(tc.ctx, tc.timeout, func() error {
				if n := calls.Add(1); tc.holdsAt > 0 && n >= tc.holdsAt {
					return nil
				}
				return errBusy
			})
			if tc.want == nil {
				if err != nil || calls.Load() != tc.holdsAt {
					t.Fatalf("err %v after %d calls, want nil after %d", err, calls.Load(), tc.holdsAt)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want one wrapping %v that says %q", err, tc.want, tc.says)
			}
		})
	}
}

func TestTrue(t *testing.T) {
	if err := True(func() bool { return true })(); err != nil {
		t.Fatal(err)
	}
	if err := True(func() bool { return false })(); !errors.Is(err, ErrNotYet) {
		t.Fatalf("a false condition says %v", err)
	}
}
