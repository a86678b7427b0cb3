package hypervisor

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A guest started from a booted template is a copy of it: host name, SSH
// host keys, machine id and the state of its kernel's random pool are the
// template's. An image makes each such guest its own through its identity
// step: an executable it ships at IdentityStepPath, which the node runs as
// the guest agent's user (root) with
//
//	IdentityStepPath <host name> <how>
//
// how being IdentityRestore (the guest is a copy of a saved one: make a new
// machine id and new SSH host keys, restart the SSH server, and reseed the
// random pool) or IdentityBoot (the guest has just booted: what it made at
// this boot is its own; set the host name). Its stdin holds IdentitySeed
// random bytes from the host, for the random pool. It exits 0 when done.

// IdentityStepPath is where an image keeps its identity step.
const IdentityStepPath = "/usr/lib/svc/identity"

// How a guest started, for its identity step.
const (
	IdentityBoot    = "boot"
	IdentityRestore = "restore"
)

// IdentitySeed is how many random bytes the step gets on its stdin.
const IdentitySeed = 64

// IdentityRunTimeout bounds one run of the step (it makes keys and
// restarts the SSH server: seconds, even under emulation): a step whose
// end the agent never reports fails with ErrExecTimeout.
const IdentityRunTimeout = time.Minute

// identityMaxOutput bounds what is kept of the step's error output.
const identityMaxOutput = 2048

// IdentityWrapper is the shell script that runs the image's step, or says
// (NoIdentityStepMarker, exit 127) that the image has none.
const IdentityWrapper = `[ -x ` + IdentityStepPath + ` ] || { echo "` + NoIdentityStepMarker + `" >&2; exit 127; }
exec ` + IdentityStepPath + ` "$@"`

// NoIdentityStepMarker is what IdentityWrapper prints for an image without a step.
const NoIdentityStepMarker = "svc: the image has no identity step"

// ErrNoIdentityStep is returned for a guest whose image ships no identity
// step.
var ErrNoIdentityStep = errors.New("the image has no identity step (" + IdentityStepPath + ")")

// RunIdentityStep runs the image's identity step in the running guest name
// through its agent, bounded by ctx, trying again for up to agentWait while
// the agent does not answer yet (0: one try). ErrNoAgent when it never
// answered, or at once for a driver without the GuestAgent role;
// ErrNoIdentityStep when the image has no step; an error that quotes the
// step's error output when it fails.
func RunIdentityStep(ctx context.Context, d Driver, name, hostname, how string, agentWait time.Duration) error {
	ag, ok := d.(GuestAgent)
	if !ok {
		return fmt.Errorf("%s: %w (the hypervisor has no guest agent channel)", name, ErrNoAgent)
	}
	if how != IdentityBoot && how != IdentityRestore {
		return fmt.Errorf("identity step: %q is neither %s nor %s", how, IdentityBoot, IdentityRestore)
	}
	seed := make([]byte, IdentitySeed)
	if _, err := rand.Read(seed); err != nil {
		return fmt.Errorf("identity step: a seed: %w", err)
	}
	giveUp := time.Now().Add(agentWait)
	for {
		var stderr bytes.Buffer
		rctx, cancel := context.WithTimeout(ctx, IdentityRunTimeout)
		res, err := ag.RunShort(rctx, name, ExecCommand{
			Argv:   []string{"sh", "-c", IdentityWrapper, "identity", hostname, how},
			Stdin:  seed,
			Stderr: &stderr, MaxOutput: identityMaxOutput,
		})
		cancel()
		switch {
		case errors.Is(err, ErrNoAgent):
			wait := time.Until(giveUp)
			if wait <= 0 {
				return err
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(min(wait, agentRetry)):
				continue
			}
		case err != nil:
			return fmt.Errorf("identity step: %w", err)
		case res.ExitCode == 127 && strings.TrimSpace(stderr.String()) == NoIdentityStepMarker:
			return ErrNoIdentityStep
		case res.ExitCode != 0:
			return fmt.Errorf("the identity step exited %d: %s", res.ExitCode, strings.TrimSpace(stderr.String()))
		}
		return nil
	}
}
