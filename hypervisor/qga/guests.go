package qga

import (
	"context"

	"github.com/svc-project/svc/hypervisor"
)

// Guests serves a driver's guest-agent calls (hypervisor.GuestAgent's, but
// SetGuestTime, which each driver makes its own way) by the guest's name:
// each is the call of that guest's Agent. A driver embeds it, given how it
// reaches a guest's agent.
type Guests struct {
	// Agent is the agent of the guest of a domain's name.
	Agent func(name string) Agent
}

// GuestInfo asks the agent what the guest is and where it is reached
// (Agent.Info).
func (g Guests) GuestInfo(ctx context.Context, name string) (hypervisor.GuestInfo, error) {
	return g.Agent(name).Info(ctx)
}

// Exec runs a program in the guest through its agent and shell, streaming
// its outputs as they grow (Agent.Exec).
func (g Guests) Exec(ctx context.Context, name string, c hypervisor.ExecCommand) (hypervisor.ExecResult, error) {
	return g.Agent(name).Exec(ctx, c)
}

// RunShort runs a short program through the agent's guest-exec, its
// outputs captured by the agent (Agent.RunShort).
func (g Guests) RunShort(ctx context.Context, name string, c hypervisor.ExecCommand) (hypervisor.ExecResult, error) {
	return g.Agent(name).RunShort(ctx, c)
}

// FreezeFS freezes the guest's file systems (guest-fsfreeze-freeze).
func (g Guests) FreezeFS(ctx context.Context, name string) (int, error) {
	return g.Agent(name).FreezeFS(ctx)
}

// ThawFS thaws them (guest-fsfreeze-thaw).
func (g Guests) ThawFS(ctx context.Context, name string) error { return g.Agent(name).ThawFS(ctx) }
