package templates

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/guest"
)

func TestSSHBanner_cases(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer string
		ok     bool
	}{
		{"an SSH server", "SSH-2.0-dropbear_2022.83\r\n", true},
		{"another server", "HTTP/1.1 400 Bad Request\r\n", false},
		{"a port that closes at once (slirp before the guest listens)", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := guest.Serve(t, "127.0.0.1:0", func(c net.Conn) { _, _ = c.Write([]byte(tc.answer)) })
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := SSHBanner(ctx, addr.String())
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if !tc.ok && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("a wait that never saw a banner ends with %v, not its deadline", err)
			}
		})
	}
}
