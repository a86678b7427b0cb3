package hypervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/digitalocean/go-libvirt"
)

var _ GuestPorts = (*Libvirt)(nil)

// hmpFlag asks libvirt to pass a monitor command as HMP (the human
// monitor), where QEMU's user network takes new host forwards.
const hmpFlag = 1

// OpenGuestPort adds a host forward on loopback to the guest's port to the
// domain's user network (HMP hostfwd_add on netdev n0), on a free port;
// release removes it. A port taken between the probe and the add is tried
// again, a bounded number of times.
func (d *Libvirt) OpenGuestPort(ctx context.Context, name string, port int) (string, func(), error) {
	if port < 1 || port > 65535 {
		return "", nil, fmt.Errorf("guest port %d is out of range", port)
	}
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return "", nil, err
	}
	hmp := func(ctx context.Context, cmd string) error {
		out, err := do(ctx, d, "forward a port of "+name, func(l *libvirt.Libvirt) (string, error) {
			return l.QEMUDomainMonitorCommand(dom, cmd, hmpFlag)
		})
		if err == nil && strings.TrimSpace(out) != "" {
			err = errors.New(strings.TrimSpace(out)) // HMP says what went wrong as text
		}
		return err
	}
	var last error
	for range 3 {
		hostPort, err := freeLoopbackPort()
		if err != nil {
			return "", nil, err
		}
		rule := fmt.Sprintf("tcp:127.0.0.1:%d", hostPort)
		if last = hmp(ctx, fmt.Sprintf("hostfwd_add n0 %s-:%d", rule, port)); last != nil {
			continue
		}
		release := func() {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := hmp(rctx, "hostfwd_remove n0 "+rule); err != nil {
				d.cfg.Log.Warn("remove a port forward", "domain", name, "rule", rule, "err", err)
			}
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)), release, nil
	}
	return "", nil, fmt.Errorf("forward guest port %d of %s: %w", port, name, last)
}

// freeLoopbackPort returns a loopback port nothing listens on now.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
