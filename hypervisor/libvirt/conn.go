package libvirt

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket/dialers"
)

// connPool is the driver's connections to libvirtd at socket, taken in
// turn; every role of the driver calls libvirtd through it (do).
type connPool struct {
	socket string

	mu    sync.Mutex
	conns [connections]*golibvirt.Libvirt
	next  int // the slot of conns the next call takes
}

// connector is what a call to libvirtd needs: a connected client.
type connector interface {
	conn() (*golibvirt.Libvirt, error)
}

// connections is how many connections to libvirtd the driver spreads its
// calls over. libvirtd serves at most max_client_requests (5 by default)
// calls of one connection at once and queues the rest, so ten domains
// started at once over one connection start in two waves.
const connections = 4

// conn returns a connected client, the next of the driver's connections in
// turn, dialling libvirtd if that one is not connected.
func (c *connPool) conn() (*golibvirt.Libvirt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := c.next
	c.next = (c.next + 1) % connections
	if l := c.conns[i]; l != nil && l.IsConnected() {
		return l, nil
	}
	l := golibvirt.NewWithDialer(dialers.NewLocal(dialers.WithSocket(c.socket), dialers.WithLocalTimeout(5*time.Second)))
	if err := l.ConnectToURI(golibvirt.QEMUSystem); err != nil {
		return nil, fmt.Errorf("connect to libvirtd at %s: %w", c.socket, err)
	}
	c.conns[i] = l
	return l, nil
}

// Close drops the connections to libvirtd.
func (c *connPool) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for i, l := range c.conns {
		if l == nil {
			continue
		}
		if err := l.Disconnect(); err != nil {
			errs = append(errs, err)
		}
		c.conns[i] = nil
	}
	return errors.Join(errs...)
}

// do runs f on a connection, bounded by ctx (go-libvirt calls take no context).
func do[T any](ctx context.Context, c connector, what string, f func(*golibvirt.Libvirt) (T, error)) (T, error) {
	var zero T
	l, err := c.conn()
	if err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := f(l)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return zero, classify(what, r.err)
		}
		return r.v, nil
	case <-ctx.Done():
		return zero, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

func (c *connPool) lookup(ctx context.Context, name string) (golibvirt.Domain, error) {
	return do(ctx, c, "look up "+name, func(l *golibvirt.Libvirt) (golibvirt.Domain, error) { return l.DomainLookupByName(name) })
}
