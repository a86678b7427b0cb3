package chaos

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"
)

// Fault kinds.
const (
	// FaultKill kills a peer with -9 (a host crash) and starts it again
	// after the hold.
	FaultKill = "kill"
	// FaultRestart stops a peer with SIGTERM and starts it again at once.
	FaultRestart = "restart"
	// FaultPause freezes a peer (SIGSTOP) for the hold, then lets it go on.
	FaultPause = "pause"
	// FaultPartition cuts a peer off from the others, both ways.
	FaultPartition = "partition"
	// FaultOneWay cuts a peer off one way: it hears nobody, or nobody
	// hears it.
	FaultOneWay = "one-way"
)

// FaultKinds lists every kind, the order reports use.
var FaultKinds = []string{FaultKill, FaultRestart, FaultPause, FaultPartition, FaultOneWay}

// Fault is one injected fault.
type Fault struct {
	Kind   string `json:"kind"`
	Peer   int    `json:"peer"`
	Leader bool   `json:"leader"`
	Detail string `json:"detail,omitempty"`
	// Start and End (nanoseconds since the run started) bound the fault:
	// injected, then healed (the peer runs and is reachable again).
	Start int64 `json:"start"`
	End   int64 `json:"end"`
}

// Nemesis injects one fault at a time, on a random peer or the leader,
// with quiet periods between faults.
type Nemesis struct {
	C    *Cluster
	W    *Workload
	Seed uint64
	// Quiet and Hold bound the random pause between faults and a fault's
	// duration.
	Quiet, Hold [2]time.Duration
	Log         *slog.Logger

	faults []Fault
	probes sync.WaitGroup
}

// Run injects faults until ctx ends; every fault is healed before it returns.
func (n *Nemesis) Run(ctx context.Context) {
	rng := rand.New(rand.NewPCG(n.Seed, 0xfa17))
	between := func(r [2]time.Duration) time.Duration {
		return r[0] + time.Duration(rng.Int64N(int64(r[1]-r[0])+1))
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(between(n.Quiet)):
		}
		f := Fault{Kind: FaultKinds[rng.IntN(len(FaultKinds))], Peer: 1 + rng.IntN(n.C.N)}
		leader := n.C.Leader(ctx)
		if rng.IntN(2) == 0 && leader != 0 {
			f.Peer = leader
		}
		f.Leader = f.Peer == leader
		if err := n.inject(ctx, &f, between(n.Hold), rng); err != nil {
			f.Detail = "error: " + err.Error()
			n.Log.Error("fault", "kind", f.Kind, "peer", f.Peer, "err", err)
		}
		n.Log.Info("fault", "kind", f.Kind, "peer", f.Peer, "leader", f.Leader, "detail", f.Detail,
			"took", time.Duration(f.End-f.Start).Round(time.Millisecond))
		n.faults = append(n.faults, f)
	}
}

// Wait waits for the restart probes the faults started.
func (n *Nemesis) Wait() { n.probes.Wait() }

// Faults returns the injected faults.
func (n *Nemesis) Faults() []Fault { return n.faults }

// inject applies f for hold and heals it. Healing does not depend on ctx:
// a run that ends mid-fault leaves no peer down, frozen or cut off.
func (n *Nemesis) inject(ctx context.Context, f *Fault, hold time.Duration, rng *rand.Rand) error {
	h := n.W.History
	heal, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sleep := func() {
		select {
		case <-ctx.Done():
		case <-time.After(hold):
		}
	}
	f.Start = h.Now()
	defer func() { f.End = h.Now() }()
	switch f.Kind {
	case FaultKill, FaultRestart:
		sig := syscall.SIGKILL
		if f.Kind == FaultRestart {
			sig = syscall.SIGTERM
		}
		if err := n.C.Signal(f.Peer, sig); err != nil {
			return err
		}
		wctx, wcancel := context.WithTimeout(heal, 30*time.Second)
		err := n.C.WaitExit(wctx, f.Peer)
		wcancel()
		if err != nil { // a graceful stop that hangs is killed
			_ = n.C.Signal(f.Peer, syscall.SIGKILL)
			_ = n.C.WaitExit(heal, f.Peer)
			f.Detail = "did not stop on SIGTERM; killed"
		}
		if f.Kind == FaultKill {
			sleep()
		}
		if err := n.C.Start(heal, f.Peer); err != nil {
			return err
		}
		restarted := h.Now()
		n.probes.Add(1)
		go func() {
			defer n.probes.Done()
			n.W.ProbeRestart(heal, f.Peer, restarted)
		}()
	case FaultPause:
		if err := n.C.Signal(f.Peer, syscall.SIGSTOP); err != nil {
			return err
		}
		sleep()
		return n.C.Signal(f.Peer, syscall.SIGCONT)
	case FaultPartition, FaultOneWay:
		in, out := true, true
		if f.Kind == FaultOneWay {
			in = rng.IntN(2) == 0
			out = !in
			f.Detail = map[bool]string{true: "hears nobody", false: "nobody hears it"}[in]
		}
		if err := n.C.Cut(heal, f.Peer, in, out); err != nil {
			return err
		}
		sleep()
		return n.C.Heal(heal, f.Peer)
	default:
		return fmt.Errorf("unknown fault %q", f.Kind)
	}
	return nil
}
