package libvirt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.GuestAgent = (*Driver)(nil)

// SetGuestTime sets the guest's clock to the host's through QEMU's guest
// agent (guest-set-time: the system clock, then the hardware clock).
func (d *Driver) SetGuestTime(ctx context.Context, name string) error {
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return err
	}
	now := time.Now()
	_, err = do(ctx, d, "set the clock of "+name, func(l *golibvirt.Libvirt) (struct{}, error) {
		return struct{}{}, l.DomainSetTime(dom, now.Unix(), uint32(now.Nanosecond()), 0)
	})
	if isAgentError(err) {
		return fmt.Errorf("%s: %w: %v", name, hypervisor.ErrNoAgent, err)
	}
	return err
}

// isAgentError reports whether libvirt refused a call for want of a guest
// agent (none connected, or it does not answer).
func isAgentError(err error) bool {
	var e golibvirt.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code == uint32(golibvirt.ErrAgentUnresponsive) || e.Code == uint32(golibvirt.ErrArgumentUnsupported)
}

// agentTimeout bounds one call to a guest's agent, in seconds.
const agentTimeout = 5

// GuestInfo asks QEMU's guest agent for the guest's OS
// (guest-get-osinfo) and addresses (guest-network-get-interfaces).
func (d *Driver) GuestInfo(ctx context.Context, name string) (hypervisor.GuestInfo, error) {
	dom, err := d.lookup(ctx, name)
	if err != nil {
		return hypervisor.GuestInfo{}, err
	}
	out, err := do(ctx, d, "ask the agent of "+name, func(l *golibvirt.Libvirt) (golibvirt.OptString, error) {
		return l.QEMUDomainAgentCommand(dom, `{"execute":"guest-get-osinfo"}`, agentTimeout, 0)
	})
	if err != nil {
		if isAgentError(err) {
			return hypervisor.GuestInfo{}, fmt.Errorf("%s: %w: %v", name, hypervisor.ErrNoAgent, err)
		}
		return hypervisor.GuestInfo{}, err
	}
	var info hypervisor.GuestInfo
	if len(out) > 0 {
		info.OS = osName([]byte(out[0]))
	}
	ifaces, err := do(ctx, d, "ask the agent of "+name+" for its addresses", func(l *golibvirt.Libvirt) ([]golibvirt.DomainInterface, error) {
		return l.DomainInterfaceAddresses(dom, uint32(golibvirt.DomainInterfaceAddressesSrcAgent), 0)
	})
	if err != nil {
		return info, err
	}
	for _, iface := range ifaces {
		for _, a := range iface.Addrs {
			if ip := net.ParseIP(a.Addr); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				info.IPs = append(info.IPs, ip.String())
			}
		}
	}
	return info, nil
}

// osName reads guest-get-osinfo's answer: the os-release name, else the
// kernel's name and release.
func osName(answer []byte) string {
	var r struct {
		Return struct {
			PrettyName    string `json:"pretty-name"`
			KernelName    string `json:"kernel-name"`
			KernelRelease string `json:"kernel-release"`
		} `json:"return"`
	}
	if json.Unmarshal(answer, &r) != nil {
		return ""
	}
	if r.Return.PrettyName != "" {
		return r.Return.PrettyName
	}
	return strings.TrimSpace(r.Return.KernelName + " " + r.Return.KernelRelease)
}
