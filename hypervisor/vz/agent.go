package vz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/hypervisor/qga"
)

var _ hypervisor.GuestAgent = (*Driver)(nil)

// A VM's guest agent is reached through its runner: the machine has a
// virtio console port named as QEMU names the agent's (AgentPortName), and
// the runner serves the port's host end on a unix socket of the VM
// (serveAgent); the driver speaks QEMU's guest agent protocol over it
// (hypervisor/qga), a connection per command.

// agentWriteWait bounds a write of the port's bytes to the client.
const agentWriteWait = 5 * time.Second

// serveAgent serves port on the unix socket sock until ctx ends: one
// connection at a time, whose bytes go to the port and which gets what the
// port sends while it is connected (what comes with no one connected is
// dropped: a late answer to a command given up on). It returns once the
// socket is listened on.
func serveAgent(ctx context.Context, sock string, port io.ReadWriter, log *slog.Logger) error {
	_ = os.Remove(sock)
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", sock)
	if err != nil {
		return fmt.Errorf("agent socket: %w", err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		l.Close()
		return err
	}
	context.AfterFunc(ctx, func() { _ = l.Close() })
	var mu sync.Mutex
	var client net.Conn
	go func() { // the port to whoever is connected
		buf := make([]byte, 32<<10)
		for {
			n, err := port.Read(buf)
			if n > 0 {
				mu.Lock()
				c := client
				mu.Unlock()
				if c != nil {
					_ = c.SetWriteDeadline(time.Now().Add(agentWriteWait))
					_, _ = c.Write(buf[:n])
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // one connection at a time to the port
		for {
			c, err := l.Accept()
			if err != nil {
				if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
					log.Warn("agent socket", "err", err)
				}
				return
			}
			mu.Lock()
			client = c
			mu.Unlock()
			_, _ = io.Copy(port, c)
			mu.Lock()
			client = nil
			mu.Unlock()
			c.Close()
		}
	}()
	return nil
}

// agentSocketPath is where VM name's runner serves its agent's port:
// beside its control socket, as short.
func (d *Driver) agentSocketPath(name string) string {
	s := d.socketPath(name)
	return s[:len(s)-len(".sock")] + ".qga"
}

// agent is VM name's guest agent, a connection to its runner's agent
// socket per command.
func (d *Driver) agent(name string) qga.Agent {
	return qga.Agent{Name: name, Log: d.cfg.Log, Call: func(ctx context.Context, cmd, out any) error {
		cfg, err := d.config(name)
		if err != nil {
			return err
		}
		if cfg.AgentSocket == "" {
			return fmt.Errorf("%s: %w (its runner serves no agent port: made before vz VMs had one)", name, hypervisor.ErrNoAgent)
		}
		r := &qga.Redial{Dial: func(ctx context.Context) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", cfg.AgentSocket)
		}}
		defer r.Close()
		return r.Call(ctx, cmd, out)
	}}
}

// SetGuestTime sets the guest's clock to the host's (guest-set-time).
func (d *Driver) SetGuestTime(ctx context.Context, name string) error {
	return d.agent(name).SetTime(ctx)
}
