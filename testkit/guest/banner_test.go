package guest

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// slowServer answers each connection with an SSH banner after delay, as a
// guest under emulation on a busy host does.
func slowServer(t *testing.T, delay time.Duration) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				<-time.After(delay)
				_, _ = c.Write([]byte("SSH-2.0-slow\r\n"))
			}()
		}
	}()
	return l.Addr().String()
}

func TestBanner_waits_until_the_callers_deadline(t *testing.T) {
	addr := slowServer(t, bannerWait+500*time.Millisecond)
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
