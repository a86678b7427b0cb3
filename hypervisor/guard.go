package hypervisor

import (
	"context"
	"net/netip"
)

// Target is a port that guests must not reach.
type Target struct {
	Addr  netip.Addr
	Port  uint16
	Proto string // "tcp" or "udp"
}

// GuestGuard is a driver's ability to keep its VMs' traffic from the
// cluster's own ports (checked at run time: not every driver has it).
type GuestGuard interface {
	// GuardGuests makes the guard drop the VMs' new connections to
	// targets, to loopback (but DNS) and to link-local addresses,
	// replacing the targets it had.
	GuardGuests(ctx context.Context, targets []Target) error
	// UnguardGuests removes the guard (when none of the peer's VMs runs
	// any more); removing none is no error.
	UnguardGuests(ctx context.Context) error
}
