package libvirt

import (
	"context"
	"errors"
	"fmt"
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
