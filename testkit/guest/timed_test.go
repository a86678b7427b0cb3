package guest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
)

// slowConn is a server's side of a connection whose first read of the
// client (after the server's banner went out) waits: a guest slow in its
// key exchange.
type slowConn struct {
	net.Conn
	wait   time.Duration
	waited bool
}

func (c *slowConn) Read(p []byte) (int, error) {
	if !c.waited {
		c.waited = true
		time.Sleep(c.wait)
	}
	return c.Conn.Read(p)
}

// serveSSH answers exec requests with exit status 0 and "ok\n" over SSH
// (password admin), each connection's key exchange held for slow; the
// first refuse connections are closed at once (a guest still booting),
// the silent ones after them held without a word until the client goes
// (a connection QEMU's user-mode network took before the guest had an
// address, whose SYN it sends again only seconds later).
func serveSSH(t *testing.T, slow time.Duration, refuse, silent int32) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ssh.ServerConfig{PasswordCallback: func(_ ssh.ConnMetadata, pw []byte) (*ssh.Permissions, error) {
		if string(pw) != "admin" {
			return nil, ssh.ErrNoAuth
		}
		return nil, nil
	}}
	cfg.AddHostKey(signer)
	var conns atomic.Int32
	return Serve(t, "127.0.0.1:0", func(c net.Conn) {
		switch n := conns.Add(1); {
		case n <= refuse:
			return
		case n <= refuse+silent:
			_, _ = io.Copy(io.Discard, c)
			return
		}
		_, chans, reqs, err := ssh.NewServerConn(&slowConn{Conn: c, wait: slow}, cfg)
		if err != nil {
			return
		}
		go ssh.DiscardRequests(reqs)
		for nc := range chans {
			ch, creqs, err := nc.Accept()
			if err != nil {
				return
			}
			for req := range creqs {
				if req.Type == "exec" {
					_ = req.Reply(true, nil)
					_, _ = ch.Write([]byte("ok\n"))
					_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
					_ = ch.Close()
				}
			}
		}
	}).String()
}

func TestWaitRunTimed_banner_on_the_commands_connection(t *testing.T) {
	const slow = 300 * time.Millisecond
	for _, tc := range []struct {
		name           string
		refuse, silent int32
		within         time.Duration // the banner within this of the start
	}{{"at the first try", 0, 0, slow}, {"after two refused connections", 2, 0, slow},
		{"after a silent connection: another after bannerRetry", 0, 1, bannerRetry + slow}} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serveSSH(t, slow, tc.refuse, tc.silent)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			start := time.Now()
			got, err := WaitRunTimed(ctx, addr, "admin", "admin", "true")
			if err != nil {
				t.Fatal(err)
			}
			if got.Output != "ok\n" {
				t.Errorf("output %q, want ok", got.Output)
			}
			if got.Banner.IsZero() || got.Banner.Before(start) || got.Banner.Sub(start) >= tc.within {
				t.Errorf("banner %v after the start, want within %v", got.Banner.Sub(start), tc.within)
			}
			if d := got.Done.Sub(got.Banner); d < slow {
				t.Errorf("the command finished %v after the banner, want at least the key exchange's %v", d, slow)
			}
		})
	}
}
