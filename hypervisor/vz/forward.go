package vz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// vz's NAT network has no port forwards of its own: the peer forwards the
// node's SSH, screen-sharing and reserved ports to the guest's address.

// Bounds of a forward.
const (
	forwardDialTimeout = 5 * time.Second
	// maxForwardConns bounds the connections one forwarded port carries at
	// once; more wait in the listen queue.
	maxForwardConns = 64
)

// GuestAddr returns the guest's current address (false while it has none,
// e.g. before its first DHCP lease).
type GuestAddr func() (netip.Addr, bool)

// Forward carries the TCP connections to listen:f.HostPort to the guest's
// f.GuestPort, until ctx ends; it returns once the port is listened on, and
// the forward's end is reported on the returned channel.
func Forward(ctx context.Context, listen string, f hypervisor.Forward, guest GuestAddr, log *slog.Logger) (<-chan error, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", net.JoinHostPort(listen, strconv.Itoa(f.HostPort)))
	if err != nil {
		return nil, fmt.Errorf("forward port %d: %w", f.HostPort, err)
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		_ = l.Close()
	}()
	go func() {
		var wg sync.WaitGroup
		slots := make(chan struct{}, maxForwardConns)
		var err error
		for {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				break
			}
			c, aerr := l.Accept()
			if aerr != nil {
				if ctx.Err() == nil && !errors.Is(aerr, net.ErrClosed) {
					err = fmt.Errorf("forward port %d: %w", f.HostPort, aerr)
				}
				break
			}
			wg.Go(func() {
				defer func() { <-slots }()
				carry(ctx, c, f.GuestPort, guest, log)
			})
		}
		wg.Wait()
		done <- err
	}()
	return done, nil
}

// carry joins one client connection to the guest's port.
func carry(ctx context.Context, client net.Conn, port int, guest GuestAddr, log *slog.Logger) {
	defer client.Close()
	ip, ok := guest()
	if !ok {
		log.Debug("forward: the guest has no address yet", "port", port)
		return
	}
	d := net.Dialer{Timeout: forwardDialTimeout}
	up, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip.String(), strconv.Itoa(port)))
	if err != nil {
		log.Debug("forward: the guest's port does not answer", "port", port, "err", err)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { _ = client.Close(); _ = up.Close() })
	defer stop()
	var wg sync.WaitGroup
	for _, p := range [][2]net.Conn{{up, client}, {client, up}} {
		wg.Go(func() {
			_, _ = io.Copy(p[0], p[1])
			if cw, ok := p[0].(interface{ CloseWrite() error }); ok {
				_ = cw.CloseWrite() // the other side's end of input
			}
		})
	}
	wg.Wait()
}
