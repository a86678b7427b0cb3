package gossip

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/poll"
)

func key(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func startKeyed(t *testing.T, name string, keys *Keys, label string, divert func(net.Conn)) *Gossip {
	t.Helper()
	g, err := New(Config{Name: name, Bind: "127.0.0.1", Local: true, Keys: keys, Label: label, Divert: divert, Report: Report{Addr: "127.0.0.1", CPU: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown() })
	return g
}

func alive(g *Gossip, name string) bool {
	m, ok := g.Member(name)
	return ok && m.State == StateAlive
}

// TestGossip_keys_and_label: only peers holding a key of the keyring and
// the cluster's label join; a rotation in three steps keeps the pool whole,
// and the old key is useless after it.
func TestGossip_keys_and_label(t *testing.T) {
	k1 := &Keys{Keys: [][]byte{key(1)}}
	a := startKeyed(t, "a", k1, "svc/c1", nil)
	b := startKeyed(t, "b", k1, "svc/c1", nil)
	ctx := context.Background()
	if _, err := b.Join(ctx, []string{a.Addr()}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "a to see b", 15*time.Second, poll.True(func() bool { return alive(a, "b") }))

	for _, tc := range []struct {
		name  string
		keys  *Keys
		label string
	}{
		{"no key", nil, "svc/c1"},
		{"another key", &Keys{Keys: [][]byte{key(9)}}, "svc/c1"},
		{"another cluster's label", k1, "svc/c2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rogue := startKeyed(t, "rogue-"+tc.name[:2], tc.keys, tc.label, nil)
			jctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			defer cancel()
			if n, err := rogue.Join(jctx, []string{a.Addr()}); err == nil {
				t.Fatalf("joined %d", n)
			}
			if _, ok := a.Member(rogue.ml.LocalNode().Name); ok {
				t.Fatal("a lists the rogue")
			}
		})
	}

	both := Keys{Keys: [][]byte{key(1), key(2)}, Primary: 0}
	for _, g := range []*Gossip{a, b} {
		if err := g.SetKeys(both); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.SetKeys(Keys{Keys: [][]byte{key(1), key(2)}, Primary: 1}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetReport(Report{Addr: "127.0.0.1", CPU: 7}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "b to read a's report under the new key", 15*time.Second, poll.True(func() bool { m, _ := b.Member("a"); return m.Report.CPU == 7 }))
	only2 := Keys{Keys: [][]byte{key(2)}}
	for _, g := range []*Gossip{a, b} {
		if err := g.SetKeys(only2); err != nil {
			t.Fatal(err)
		}
	}
	if got := a.Keys(); len(got.Keys) != 1 || !bytes.Equal(got.Keys[0], key(2)) {
		t.Fatalf("a's keys %v", got)
	}
	if err := b.SetReport(Report{Addr: "127.0.0.1", CPU: 8}); err != nil {
		t.Fatal(err)
	}
	poll.For(t, "a to read b's report after the old key went", 15*time.Second, poll.True(func() bool { m, _ := a.Member("b"); return m.Report.CPU == 8 && m.State == StateAlive }))
	stale := startKeyed(t, "stale", k1, "svc/c1", nil)
	jctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := stale.Join(jctx, []string{a.Addr()}); err == nil {
		t.Fatal("a peer with the old key joined")
	}
}

// TestGossip_divert_tls hands a TLS connection on the gossip port to the
// join service, and memberlist's own streams to memberlist.
func TestGossip_divert_tls(t *testing.T) {
	got := make(chan net.Conn, 1)
	k := &Keys{Keys: [][]byte{key(1)}}
	a := startKeyed(t, "a", k, "svc/c1", func(c net.Conn) { got <- c })
	b := startKeyed(t, "b", k, "svc/c1", nil)
	go func() {
		c, err := tls.Dial("tcp", a.Addr(), &tls.Config{InsecureSkipVerify: true})
		if err == nil {
			_ = c.Close()
		}
	}()
	select {
	case c := <-got:
		buf := make([]byte, 1)
		if _, err := c.Read(buf); err != nil || buf[0] != tlsHandshake {
			t.Fatalf("diverted stream starts with %x (%v)", buf, err)
		}
		_ = c.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the TLS stream was not diverted")
	}
	if _, err := b.Join(context.Background(), []string{a.Addr()}); err != nil {
		t.Fatalf("memberlist join through the sorting transport: %v", err)
	}
	poll.For(t, "a to see b", 15*time.Second, poll.True(func() bool { return alive(a, "b") }))
}
