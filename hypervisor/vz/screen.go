package vz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/svc-project/svc/internal/rfb"
)

// vz has no VNC server of its own (the framework's is private API): a
// VM's screen is its guest's Screen Sharing (macOS) or VNC server (Linux)
// on port 5900 of its NAT address. The runner serves the VM's vnc port as
// an RFB proxy: a client proves it knows the VM's password (VNC
// authentication; no security is refused), then the proxy logs in to the
// guest's screen and carries the session both ways.

// Bounds of the screen proxy.
const (
	guestScreenPort   = 5900
	screenHandshake   = 10 * time.Second
	maxScreenSessions = 8
)

// ScreenConfig is one VM's screen.
type ScreenConfig struct {
	// Listen is the node address and port clients reach.
	Listen string
	// Password is the VM's: what clients must know.
	Password string
	// GuestPassword is what the guest's screen asks for ("" when it asks
	// for nothing).
	GuestPassword string
	// Guest finds the guest's address; GuestPort is its screen's port
	// (5900 when 0).
	Guest     GuestAddr
	GuestPort int
}

// ServeScreen listens on c.Listen and proxies each client that logs in
// with c.Password to the guest's screen, until ctx ends. It returns once
// the port is listened on.
func ServeScreen(ctx context.Context, c ScreenConfig, log *slog.Logger) error {
	if c.Password == "" {
		return errors.New("screen: a VM's screen needs its password")
	}
	if c.GuestPort == 0 {
		c.GuestPort = guestScreenPort
	}
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", c.Listen)
	if err != nil {
		return fmt.Errorf("screen: %w", err)
	}
	go func() { <-ctx.Done(); _ = l.Close() }()
	go func() {
		slots := make(chan struct{}, maxScreenSessions)
		var wg sync.WaitGroup
		defer wg.Wait()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			select {
			case slots <- struct{}{}:
			default:
				conn.Close() // as many viewers as a screen takes
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				if err := c.session(ctx, conn); err != nil {
					log.Info("screen session", "client", conn.RemoteAddr().String(), "err", err)
				}
			}()
		}
	}()
	return nil
}

// session is one client's: its login, the guest's, then the screen.
func (c ScreenConfig) session(ctx context.Context, client net.Conn) error {
	defer client.Close()
	_ = client.SetDeadline(time.Now().Add(screenHandshake))
	if err := rfb.ServeVNCAuth(client, c.Password); err != nil {
		return fmt.Errorf("client login: %w", err)
	}
	addr, ok := c.Guest()
	if !ok {
		return errors.New("the guest has no address yet")
	}
	d := net.Dialer{Timeout: screenHandshake}
	guest, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(addr, uint16(c.GuestPort)).String())
	if err != nil {
		return fmt.Errorf("the guest's screen: %w", err)
	}
	defer guest.Close()
	_ = guest.SetDeadline(time.Now().Add(screenHandshake))
	if _, err := rfb.Login(guest, c.GuestPassword); err != nil {
		return fmt.Errorf("log in to the guest's screen: %w", err)
	}
	_ = client.SetDeadline(time.Time{})
	_ = guest.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { client.Close(); guest.Close() })
	defer stop()
	// both sides are where the client sends its ClientInit: from here
	// the session is theirs
	errc := make(chan error, 2)
	go func() { _, err := io.Copy(guest, client); errc <- err }()
	go func() { _, err := io.Copy(client, guest); errc <- err }()
	err = <-errc
	client.Close()
	guest.Close()
	<-errc
	if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}
