package peer_test

import (
	"time"

	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/node/host"
	"github.com/svc-project/svc/node/hotpool"
	"github.com/svc-project/svc/node/jobs"
	"github.com/svc-project/svc/node/runnerpool"
)

// The bounds of the real-VM tests' waits: each is the product's own bound
// on what is waited for, not a guess of how fast this machine is (a guest
// under TCG on two busy cores takes what it takes, up to the bound the
// product gives it). Where a step has no bound of the product's, the
// allowance is sized by what the step moves, and says so. A wait for a
// guest shows its console when it runs out (waitGuestAgent, waitImageOp).
const (
	// guestBootWait: a guest's boot, up to its agent or SSH.
	guestBootWait = hypervisor.BootTimeout
	// guestRunWait: a short command run in a booted guest (a typed line, a
	// shell command through the agent).
	guestRunWait = hypervisor.MaxShortRun
	// saveMemoryWait: a template's memory written to its file: at most
	// 512 MiB in these tests, seconds at disk speed.
	saveMemoryWait = time.Minute
	// templateWait: a booted template built: its boot, then its memory
	// saved (node/templates bounds the boot by hypervisor.BootTimeout).
	templateWait = guestBootWait + saveMemoryWait
	// hotFillWait: one hot guest restored from its template and through its
	// identity step. A pool fills one guest at a time, so n guests take n.
	hotFillWait = hotpool.DefaultFillTimeout
	// domainGoneWait: a deleted VM's domain removed from its host.
	domainGoneWait = host.RemoveTimeout
	// imageOpWait: a commit or save of a real VM: the ACPI shutdown
	// (host.StopGrace, then forced off) and the boot on the result. The
	// disk written between them is a test guest's (at most 1 GiB, mostly
	// sparse): seconds.
	imageOpWait = host.StopGrace + guestBootWait
	// pushWait: a push or pull job of a real VM's disk: the VM's stop
	// before its disk is read (jobs.PushStopTimeout), and a minute for the
	// export and the transfer: about 20 MB to a registry on this machine,
	// 10 s at the slowest rate these tests set (4 uploads at 512 KiB/s).
	pushWait = jobs.PushStopTimeout + time.Minute
	// runnerJobWait: a runner pool's job on a real VM: the VM restored from
	// its warm config's template and made its own (the identity step,
	// hypervisor.IdentityRunTimeout), then its runner reporting within the
	// pool's agent wait (runnerpool.DefaultAgentWait); the job itself is a
	// few shell lines. Jobs under a quota of q VMs wait on each other:
	// n of them take ceil(n/q) of these.
	runnerJobWait = hypervisor.IdentityRunTimeout + runnerpool.DefaultAgentWait
)

// jobsWait bounds n runner jobs that run at most q at a time.
func jobsWait(n, q int) time.Duration { return time.Duration((n+q-1)/q) * runnerJobWait }
