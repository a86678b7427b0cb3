package netgate

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

type switchGate struct{ open atomic.Bool }

func (g *switchGate) Allowed(string) bool { return g.open.Load() }

func TestCheck_cases(t *testing.T) {
	open, shut := &switchGate{}, &switchGate{}
	open.open.Store(true)
	cases := []struct {
		name string
		gate Gate
		want error
	}{
		{"no gate", nil, nil},
		{"open", open, nil},
		{"shut", shut, ErrClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := Check(c.gate, "10.0.0.1:1"); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("Check = %v, want %v", err, c.want)
			}
		})
	}
}

func TestWrap_cuts_a_live_connection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err == nil {
			_, _ = c.Write([]byte("hi"))
			defer c.Close()
			_, _ = c.Read(make([]byte, 1))
		}
	}()
	g := &switchGate{}
	g.open.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := DialContext(g, &net.Dialer{})(ctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := Wrap(g, l.Addr().String(), raw)
	defer c.Close()
	if _, err := c.Read(make([]byte, 2)); err != nil {
		t.Fatalf("read through an open gate: %v", err)
	}
	g.open.Store(false)
	if _, err := c.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after the cut = %v, want ErrClosed", err)
	}
	if _, err := DialContext(g, &net.Dialer{})(ctx, "tcp", l.Addr().String()); !errors.Is(err, ErrClosed) {
		t.Fatalf("dial through a shut gate = %v", err)
	}
}
