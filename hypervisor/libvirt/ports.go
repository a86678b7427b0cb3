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
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.GuestPorts = (*Driver)(nil)

// hmpFlag asks libvirt to pass a monitor command as HMP (the human
// monitor), where QEMU's user network takes new host forwards.
const hmpFlag = 1

// guestPorts is the driver's GuestPorts role: host forwards to guests'
// ports on QEMU's user network, recorded per domain in a file so a forward
// a previous run of the peer left is removed.
type guestPorts struct {
	*connPool
	cfg *Config
	// mu guards the files that record each domain's open port forwards;
	// run tells this driver's forwards from those a previous run left.
	mu  sync.Mutex
	run string
}

// OpenGuestPort adds a host forward on loopback to the guest's port to the
// domain's user network (HMP hostfwd_add on netdev n0), on a free port that
// only the peer's user may connect to (ownForwardPort, before the forward
// listens); release removes both. A port taken between the probe and the
// add is tried again, a bounded number of times.
func (p *guestPorts) OpenGuestPort(ctx context.Context, name string, port int) (string, func(), error) {
	if port < 1 || port > 65535 {
		return "", nil, fmt.Errorf("guest port %d is out of range", port)
	}
	hmp, err := p.hmp(ctx, name)
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
		if err := p.recordForward(name, rule, true); err != nil {
			return "", nil, err
		}
		if err := p.ownForwardPort(ctx, hostPort, true); err != nil {
			_ = p.recordForward(name, rule, false)
			return "", nil, fmt.Errorf("forward guest port %d of %s: %w", port, name, err)
		}
		if last = hmpAdd(ctx, hmp, rule, port); last != nil {
			p.forgetForward(name, rule, hostPort)
			continue
		}
		release := func() {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := hmpRemove(rctx, hmp, rule); err != nil {
				p.cfg.Log.Warn("remove a port forward", "domain", name, "rule", rule, "err", err)
				return
			}
			if err := p.ownForwardPort(rctx, hostPort, false); err != nil {
				p.cfg.Log.Warn("remove a port forward", "domain", name, "rule", rule, "err", err)
				return
			}
			if err := p.recordForward(name, rule, false); err != nil {
				p.cfg.Log.Warn("forget a port forward", "domain", name, "rule", rule, "err", err)
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
func (p *guestPorts) hmp(ctx context.Context, name string) (hmpFunc, error) {
	dom, err := p.lookup(ctx, name)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, cmd string) (string, error) {
		out, err := do(ctx, p, "forward a port of "+name, func(l *golibvirt.Libvirt) (string, error) {
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
func (p *guestPorts) forwardsFile(name string) string {
	return filepath.Join(p.cfg.Dir, name+".forwards")
}

// forward is one line of a forwards file.
type forward struct{ run, rule string }

func (p *guestPorts) forwards(name string) []forward {
	b, err := os.ReadFile(p.forwardsFile(name))
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
func (p *guestPorts) writeForwards(name string, fs []forward) error {
	if len(fs) == 0 {
		if err := os.Remove(p.forwardsFile(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("port forwards of %s: %w", name, err)
		}
		return nil
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s %s\n", f.run, f.rule)
	}
	if err := os.WriteFile(p.forwardsFile(name), []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("port forwards of %s: %w", name, err)
	}
	return nil
}

// recordForward adds (or removes) one of this run's rules in the record.
func (p *guestPorts) recordForward(name, rule string, add bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	fs := slices.DeleteFunc(p.forwards(name), func(f forward) bool { return f.rule == rule })
	if add {
		fs = append(fs, forward{p.run, rule})
	}
	return p.writeForwards(name, fs)
}

// CloseGuestPorts removes the forwards the record names that a previous
// run of the peer made (it crashed holding them, never releasing them);
// this run's own forwards stay open.
func (p *guestPorts) CloseGuestPorts(ctx context.Context, name string) (int, error) {
	var stale []string
	for _, f := range p.forwards(name) {
		if f.run != p.run {
			stale = append(stale, f.rule)
		}
	}
	if len(stale) == 0 {
		return 0, nil
	}
	removed := 0
	if hmp, err := p.hmp(ctx, name); err == nil {
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
		if port, ok := rulePort(rule); ok {
			if err := p.ownForwardPort(ctx, port, false); err != nil {
				return removed, err
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fs := slices.DeleteFunc(p.forwards(name), func(f forward) bool { return slices.Contains(stale, f.rule) })
	return removed, p.writeForwards(name, fs)
}

// forgetForward drops a forward that was never made: its port and record.
func (p *guestPorts) forgetForward(name, rule string, hostPort int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.ownForwardPort(ctx, hostPort, false); err != nil {
		p.cfg.Log.Warn("a port forward that failed", "domain", name, "rule", rule, "err", err)
		return // its record stays: CloseGuestPorts of a later run lets the port go
	}
	_ = p.recordForward(name, rule, false)
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
