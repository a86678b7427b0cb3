package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// IdentitySettled reports whether a VM's identity step ran or never will:
// not while it is pending, nor "none" only because the guest's agent had
// not answered yet (the step runs once it does).
func IdentitySettled(id *GuestIdentity) bool {
	switch {
	case id == nil, id.State == IdentityPending:
		return false
	case id.State == IdentityNone:
		return !strings.HasPrefix(id.Message, IdentityNoAgentYet)
	}
	return true
}

// identityGrace is how long WaitGuestReady waits for a VM's identity state
// to be recorded at all once its agent answers (a peer of a release before
// the identity step records none). A state that is recorded, pending, is
// waited for to the end: the host runs the step as soon as the agent
// answers.
const identityGrace = 15 * time.Second

// WaitGuestReady waits, at most wait, until the VM's guest agent runs a
// command and the guest has its own identity (host name, keys, machine
// id): what a job needs before its first command in the guest. A guest
// whose identity step ran has both.
func (c *Client) WaitGuestReady(ctx context.Context, namespace, vm string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// A guest whose identity step ran (through its agent: a VM restored
	// from a template has it before it is Running) is ready now.
	if got, err := c.GetVM(ctx, namespace, vm); err == nil && got.Identity != nil && got.Identity.State == IdentitySet {
		return nil
	}
	var last error
	var answered time.Time
	for {
		r, err := c.RunVM(ctx, namespace, vm, RunRequest{Command: []string{"true"}})
		if err == nil && r.ExitCode == 0 {
			if answered.IsZero() {
				answered = time.Now()
			}
			got, gerr := c.GetVM(ctx, namespace, vm)
			if gerr == nil && (IdentitySettled(got.Identity) || got.Identity == nil && time.Since(answered) > identityGrace) {
				return nil
			}
			err = gerr
			if err == nil {
				err = errors.New("its identity step has not run yet")
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("the guest agent of VM %s did not run a command within %s: %v", vm, wait, last)
		case <-time.After(300 * time.Millisecond):
		}
	}
}
