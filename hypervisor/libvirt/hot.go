package libvirt

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.HotClaimer = (*Driver)(nil)

// ClaimHot hands the running hot guest s.Name to its VM: QEMU's user
// network gets the VM's host forwards (HMP hostfwd_add), its screen, made
// with "-vnc none", starts listening at the VM's port (QMP display-update)
// with the VM's password (QMP set_password), and the domain's persistent
// definition takes the VM's QEMU arguments, so that it stops and starts as
// the VM. The caller destroys the domain when this fails.
func (d *Driver) ClaimHot(ctx context.Context, s hypervisor.Spec) error {
	if err := d.checkName(s.Name); err != nil {
		return err
	}
	dom, err := d.lookup(ctx, s.Name)
	if err != nil {
		return err
	}
	if st, err := d.state(ctx, dom); err != nil {
		return err
	} else if st != hypervisor.StateRunning {
		return fmt.Errorf("claim %s: the domain is %s, not running", s.Name, st)
	}
	hmp, err := d.hmp(ctx, s.Name)
	if err != nil {
		return err
	}
	for _, f := range s.Forwards {
		if err := hmpAdd(ctx, hmp, fmt.Sprintf("tcp:%s:%d", s.ListenAddr, f.HostPort), f.GuestPort); err != nil {
			return fmt.Errorf("claim %s: forward port %d to guest port %d: %w", s.Name, f.HostPort, f.GuestPort, err)
		}
	}
	if s.VNCPort != 0 {
		if s.VNCPort < 5900 || s.VNCPort > 65535 {
			return fmt.Errorf("claim %s: VNC port %d is not 5900-65535", s.Name, s.VNCPort)
		}
		// The password first: the screen never listens with the pool's.
		if s.VNCPassword != "" {
			if err := d.qmp(ctx, dom, "set_password", map[string]any{"protocol": "vnc", "password": s.VNCPassword}); err != nil {
				return fmt.Errorf("claim %s: the screen's password: %w", s.Name, err)
			}
		}
		addr := map[string]any{"type": "inet", "host": s.ListenAddr, "port": strconv.Itoa(s.VNCPort)}
		if err := d.qmp(ctx, dom, "display-update", map[string]any{"type": "vnc", "addresses": []any{addr}}); err != nil {
			return fmt.Errorf("claim %s: open the screen at port %d: %w", s.Name, s.VNCPort, err)
		}
	}
	return d.redefine(ctx, dom, s)
}

// redefine makes the persistent definition of the running domain dom run
// spec s at its next start: its hardware as it is, s's QEMU arguments
// (forwards, screen) and VNC secret.
func (d *Driver) redefine(ctx context.Context, dom golibvirt.Domain, s hypervisor.Spec) error {
	secret, err := d.writeVNCSecret(s)
	if err != nil {
		return err
	}
	s.Hot = false
	own, err := domainXML(d.cfg.DomainType, s, domainFiles{disk: d.DiskPath(s.Name), console: d.consolePath(s.Name), vncSecret: secret, label: d.user.label()})
	if err != nil {
		return err
	}
	cur, err := do(ctx, d, "read the definition of "+s.Name, func(l *golibvirt.Libvirt) (string, error) {
		return l.DomainGetXMLDesc(dom, golibvirt.DomainXMLInactive)
	})
	if err != nil {
		return err
	}
	curArgs, err := commandLine(cur)
	if err != nil {
		return fmt.Errorf("claim %s: %w", s.Name, err)
	}
	ownArgs, err := commandLine(own)
	if err != nil {
		return err
	}
	x := strings.Replace(cur, curArgs, ownArgs, 1)
	_, err = do(ctx, d, "define "+s.Name, func(l *golibvirt.Libvirt) (golibvirt.Domain, error) { return l.DomainDefineXML(x) })
	return err
}

// qmp runs a QMP command in the domain's QEMU; QEMU's error is returned.
func (d *Driver) qmp(ctx context.Context, dom golibvirt.Domain, command string, args any) error {
	b, err := json.Marshal(map[string]any{"execute": command, "arguments": args})
	if err != nil {
		return err
	}
	out, err := do(ctx, d, command+" in "+dom.Name, func(l *golibvirt.Libvirt) (string, error) {
		return l.QEMUDomainMonitorCommand(dom, string(b), 0)
	})
	if err != nil {
		return err
	}
	var reply struct {
		Error *struct {
			Class, Desc string
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil {
		return fmt.Errorf("%s: QEMU's reply %q: %w", command, out, err)
	}
	if reply.Error != nil {
		return fmt.Errorf("%s: %s: %s", command, reply.Error.Class, reply.Error.Desc)
	}
	return nil
}
