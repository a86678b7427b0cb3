package libvirt

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.GuestPorts = (*Driver)(nil)

// hmpFlag asks libvirt to pass a monitor command as HMP (the human
// monitor), where QEMU's user network takes new host forwards.
const hmpFlag = 1

// OpenGuestPort adds a host forward on loopback to the guest's port to the
// domain's user network (HMP hostfwd_add on netdev n0), on a free port that
// only the peer's user may connect to (ownForwardPort, before the forward
// listens); release removes both. A port taken between the probe and the
// add is tried again, a bounded number of times.
func (d *Driver) OpenGuestPort(ctx context.Context, name string, port int) (string, func(), error) {
	if port < 1 || port > 65535 {
		return "", nil, fmt.Errorf("guest port %d is out of range", port)
	}
	hmp, err := d.hmp(ctx, name)
	if err != nil {
		return "", nil, err
	}
	var last error
	for range 3 {
		hostPort, err := freeLoopbackPort()
		if err != nil {
			return "", nil, err
		}
		rule := fmt.Sprintf("tcp:127.0.0.1:%d", hostPort)
		// Recorded before it exists, so that a crash between the two
		// leaves a rule to remove, never a forward nobody knows of.
		if err := d.recordForward(name, rule, true); err != nil {
			return "", nil, err
		}
		if err := d.ownForwardPort(ctx, hostPort, true); err != nil {
			_ = d.recordForward(name, rule, false)
			return "", nil, fmt.Errorf("forward guest port %d of %s: %w", port, name, err)
		}
		if last = hmpAdd(ctx, hmp, rule, port); last != nil {
			d.forgetForward(name, rule, hostPort)
			continue
		}
		release := func() {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := hmpRemove(rctx, hmp, rule); err != nil {
				d.cfg.Log.Warn("remove a port forward", "domain", name, "rule", rule, "err", err)
				return
			}
			if err := d.ownForwardPort(rctx, hostPort, false); err != nil {
				d.cfg.Log.Warn("remove a port forward", "domain", name, "rule", rule, "err", err)
				return
			}
			if err := d.recordForward(name, rule, false); err != nil {
				d.cfg.Log.Warn("forget a port forward", "domain", name, "rule", rule, "err", err)
			}
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(hostPort)), release, nil
	}
	return "", nil, fmt.Errorf("forward guest port %d of %s: %w", port, name, last)
}

// hmpFunc sends an HMP command to a domain's QEMU and returns what it
// printed.
type hmpFunc func(context.Context, string) (string, error)

// hmp returns the hmpFunc of a domain.
func (d *Driver) hmp(ctx context.Context, name string) (hmpFunc, error) {
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, cmd string) (string, error) {
		out, err := do(ctx, d, "forward a port of "+name, func(l *golibvirt.Libvirt) (string, error) {
			return l.QEMUDomainMonitorCommand(dom, cmd, hmpFlag)
		})
		return strings.TrimSpace(out), err
	}, nil
}

// hmpAdd adds a host forward: QEMU prints nothing when it did, and what
// went wrong when it did not.
func hmpAdd(ctx context.Context, hmp hmpFunc, rule string, port int) error {
	out, err := hmp(ctx, fmt.Sprintf("hostfwd_add n0 %s-:%d", rule, port))
	if err == nil && out != "" {
		err = errors.New(out)
	}
	return err
}

// hmpRemove removes a host forward: QEMU prints "host forwarding rule for
// ... removed" when it did.
func hmpRemove(ctx context.Context, hmp hmpFunc, rule string) error {
	out, err := hmp(ctx, "hostfwd_remove n0 "+rule)
	if err == nil && !strings.HasSuffix(out, "removed") {
		err = errors.New(out)
	}
	return err
}

// forwardsFile records the domain's open port forwards, one a line as
// "<run> <rule>", beside its disk: they outlive a crash of the peer, as
// the forwards in its QEMU do, and the run says which driver made them.
func (d *Driver) forwardsFile(name string) string {
	return filepath.Join(d.cfg.Dir, name+".forwards")
}

// forward is one line of a forwards file.
type forward struct{ run, rule string }

func (d *Driver) forwards(name string) []forward {
	b, err := os.ReadFile(d.forwardsFile(name))
	if err != nil {
		return nil
	}
	var fs []forward
	for _, line := range strings.Split(string(b), "\n") {
		if run, rule, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			fs = append(fs, forward{run, rule})
		}
	}
	return fs
}

// writeForwards replaces the domain's record; the caller holds fwdMu.
func (d *Driver) writeForwards(name string, fs []forward) error {
	if len(fs) == 0 {
		if err := os.Remove(d.forwardsFile(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("port forwards of %s: %w", name, err)
		}
		return nil
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s %s\n", f.run, f.rule)
	}
	if err := os.WriteFile(d.forwardsFile(name), []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("port forwards of %s: %w", name, err)
	}
	return nil
}

// recordForward adds (or removes) one of this run's rules in the record.
func (d *Driver) recordForward(name, rule string, add bool) error {
	d.fwdMu.Lock()
	defer d.fwdMu.Unlock()
	fs := slices.DeleteFunc(d.forwards(name), func(f forward) bool { return f.rule == rule })
	if add {
		fs = append(fs, forward{d.run, rule})
	}
	return d.writeForwards(name, fs)
}

// CloseGuestPorts removes the forwards the record names that a previous
// run of the peer made (it crashed holding them, never releasing them);
// this run's own forwards stay open.
func (d *Driver) CloseGuestPorts(ctx context.Context, name string) (int, error) {
	var stale []string
	for _, f := range d.forwards(name) {
		if f.run != d.run {
			stale = append(stale, f.rule)
		}
	}
	if len(stale) == 0 {
		return 0, nil
	}
	removed := 0
	if hmp, err := d.hmp(ctx, name); err == nil {
		for _, rule := range stale {
			// A rule a crash left before its forward was made is not found: fine.
			if err := hmpRemove(ctx, hmp, rule); err == nil {
				removed++
			}
		}
	} else if !errors.Is(err, hypervisor.ErrNotFound) {
		return 0, err
	}
	for _, rule := range stale {
		if p, ok := rulePort(rule); ok {
			if err := d.ownForwardPort(ctx, p, false); err != nil {
				return removed, err
			}
		}
	}
	d.fwdMu.Lock()
	defer d.fwdMu.Unlock()
	fs := slices.DeleteFunc(d.forwards(name), func(f forward) bool { return slices.Contains(stale, f.rule) })
	return removed, d.writeForwards(name, fs)
}

// forgetForward drops a forward that was never made: its port and record.
func (d *Driver) forgetForward(name, rule string, hostPort int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.ownForwardPort(ctx, hostPort, false); err != nil {
		d.cfg.Log.Warn("a port forward that failed", "domain", name, "rule", rule, "err", err)
		return // its record stays: CloseGuestPorts of a later run lets the port go
	}
	_ = d.recordForward(name, rule, false)
}

// newRunID names one run of the driver.
func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
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
