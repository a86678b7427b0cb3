package guest

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

func TestBanner_waits_until_the_callers_deadline(t *testing.T) {
	// A stand-in for a guest under emulation on a busy host: its banner
	// comes after bannerWait.
	addr := Serve(t, "127.0.0.1:0", func(c net.Conn) {
		<-time.After(bannerWait + 500*time.Millisecond)
		_, _ = c.Write([]byte("SSH-2.0-slow\r\n"))
	}).String()
	tests := []struct {
		name    string
		within  time.Duration // 0: no deadline
		want    string
		timeout bool
	}{
		{name: "a deadline past the answer", within: bannerWait + 10*time.Second, want: "SSH-2.0-slow"},
		{name: "a deadline before the answer", within: 300 * time.Millisecond, timeout: true},
		{name: "no deadline: bannerWait", timeout: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.within > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.within)
				defer cancel()
			}
			got, err := Banner(ctx, addr)
			if tc.timeout {
				if !errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("got %q %v, want a deadline error", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q %v, want %q", got, err, tc.want)
			}
		})
	}
}
