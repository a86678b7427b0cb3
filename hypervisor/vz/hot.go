package vz

import (
	"context"
	"fmt"

	"github.com/svc-project/svc/hypervisor"
)

var _ hypervisor.HotClaimer = memoryDriver{}

// ClaimHot hands the running hot guest s.Name to its VM: the guest's
// runner, which served nothing for it (a hot guest has no forwards and no
// screen), serves the VM's forwards and screen (its port, with its
// password) from then on, and keeps them in its config, so that the VM
// stopped and started again is the VM's. Hot guests come from templates,
// so only a host that saves memory claims them. The caller deletes the
// domain when this fails.
func (m memoryDriver) ClaimHot(ctx context.Context, s hypervisor.Spec) error {
	cfg, err := m.config(s.Name)
	if err != nil {
		return err
	}
	req := request{Op: opClaim, Claim: &claimRequest{ListenAddr: s.ListenAddr, Forwards: s.Forwards, VNCPort: s.VNCPort, VNCPassword: s.VNCPassword}}
	if _, err := ask(ctx, cfg.Socket, req); err != nil {
		return fmt.Errorf("vz: claim %s: %w", s.Name, err)
	}
	return nil
}
