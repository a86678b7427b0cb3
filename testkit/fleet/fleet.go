package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/testkit/chaos"
)

// Config says how to run the fleet and what to measure at each size.
type Config struct {
	// Script is scripts/local-cluster.sh, Bin the svc binary, Dir where
	// the peers keep their state and logs.
	Script, Bin, Dir string
	// Clients write through the leader for WriteFor (16 and 20 s: the
	// figures issue 71 started from).
	Clients  int
	WriteFor time.Duration
	// Idle is how long the leader's CPU is measured with nothing to do,
	// after Settle (the cluster formed, the last joins applied).
	Idle, Settle time.Duration
	// Deploys are made, 4 at a time, to time deploy → Running.
	Deploys int
	// AgentArgs are more flags for every agent (--raft-replicas 2).
	AgentArgs string
	Log       *slog.Logger
}

// Point is what one size of fleet measured.
type Point struct {
	Peers int
	// Formed: the cluster up, every peer READY.
	Formed time.Duration
	// WritesPerSec acknowledged by the leader from Clients clients.
	WritesPerSec float64
	// LeaderIdleCores: the leader's CPU with nothing to do, in cores.
	LeaderIdleCores float64
	// PeerRSSMedian and PeerRSSMax: the peers' resident memory at idle.
	PeerRSSMedian, PeerRSSMax int64
	// DeployP50 and DeployP99: a deploy call until the VM is Running
	// (fake hypervisor).
	DeployP50, DeployP99 time.Duration
	// Join: a new host started until its node is READY.
	Join time.Duration
	// NotReady: a host killed until its node is NOT READY.
	NotReady time.Duration
	// Failover: the leader killed until the first write is accepted.
	Failover time.Duration
}

// step bounds: each is the bound of the thing waited for, not a guess of
// the machine: a node is marked NOT READY within the leader's health
// deadline, a leader elected within a few election timeouts, a join
// within the join's own deadline.
const (
	opTimeout    = 10 * time.Second
	joinWait     = 3 * time.Minute
	notReadyWait = 2 * time.Minute
	failoverWait = time.Minute
	deployWait   = 2 * time.Minute
)

// Measure starts a fleet of n peers (and one more, stopped, that joins
// during the run), measures it and takes it down.
func Measure(ctx context.Context, cfg Config, n int) (Point, error) {
	p := Point{Peers: n}
	c := &chaos.Cluster{Script: cfg.Script, Bin: cfg.Bin, Dir: cfg.Dir, N: n + 1, Started: n, AgentArgs: cfg.AgentArgs}
	start := time.Now()
	if err := c.Up(ctx); err != nil {
		_ = c.Down()
		return p, fmt.Errorf("%d peers: %w", n, err)
	}
	defer func() { _ = c.Down() }()
	p.Formed = time.Since(start)
	cfg.Log.Info("formed", "peers", n, "took", p.Formed.Round(time.Millisecond))
	leader := c.Leader(ctx)
	if leader == 0 {
		return p, errors.New("no leader")
	}
	if err := sleep(ctx, cfg.Settle); err != nil {
		return p, err
	}
	var err error
	if p.LeaderIdleCores, err = idleCores(ctx, c, leader, cfg.Idle); err != nil {
		return p, err
	}
	if p.PeerRSSMedian, p.PeerRSSMax, err = rss(c, n); err != nil {
		return p, err
	}
	cfg.Log.Info("idle", "peers", n, "leader cores", p.LeaderIdleCores, "rss median", p.PeerRSSMedian>>20, "rss max", p.PeerRSSMax>>20)
	if p.WritesPerSec, err = writes(ctx, c, leader, cfg.Clients, cfg.WriteFor); err != nil {
		return p, err
	}
	cfg.Log.Info("writes", "peers", n, "per second", p.WritesPerSec)
	if p.DeployP50, p.DeployP99, err = deploys(ctx, c, leader, cfg.Deploys); err != nil {
		return p, err
	}
	if p.Join, err = join(ctx, c, leader, n+1); err != nil {
		return p, err
	}
	victim := 1
	for victim == leader {
		victim++
	}
	if p.NotReady, err = killHost(ctx, c, leader, victim); err != nil {
		return p, err
	}
	// Back before the leader dies: two dead of three voters would leave
	// no majority to elect one.
	if err := c.Start(ctx, victim); err != nil {
		return p, err
	}
	if err := phaseOf(ctx, c, leader, c.Name(victim), api.PhaseReady, joinWait); err != nil {
		return p, err
	}
	if p.Failover, err = killLeader(ctx, c, leader, n+1); err != nil {
		return p, err
	}
	cfg.Log.Info("measured", "point", fmt.Sprintf("%+v", p))
	return p, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// writes runs clients that tag the leader's node through the leader for d
// and returns the acknowledged writes a second.
func writes(ctx context.Context, c *chaos.Cluster, leader, clients int, d time.Duration) (float64, error) {
	var ok, failed atomic.Int64
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	start := time.Now()
	for i := range clients {
		wg.Go(func() {
			cl := c.Client(leader, opTimeout)
			for k := 0; wctx.Err() == nil; k++ {
				if _, err := cl.TagNode(wctx, api.DefaultNamespace, c.Name(leader), fmt.Sprintf("w%d-%d", i, k%4)); err == nil {
					ok.Add(1)
				} else if wctx.Err() == nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > ok.Load()/100 {
		return 0, fmt.Errorf("%d of %d writes failed", f, f+ok.Load())
	}
	return float64(ok.Load()) / time.Since(start).Seconds(), nil
}

// deploys makes n deploys 4 at a time through the leader and returns the
// p50 and p99 of deploy call to Running; each VM is deleted once Running.
func deploys(ctx context.Context, c *chaos.Cluster, leader, n int) (time.Duration, time.Duration, error) {
	if n == 0 {
		return 0, 0, nil
	}
	if err := chaos.UploadImage(ctx, c, "fleet"); err != nil {
		return 0, 0, err
	}
	cl := c.Client(leader, deployWait)
	took := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	one, quarter, minute := 1, 0.25, 1.0
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			start := time.Now()
			vm, err := cl.DeployVM(ctx, api.DefaultNamespace, api.DeployRequest{Image: "fleet", Name: fmt.Sprintf("f%d", i), CPU: &one, Memory: &quarter, Timeout: &minute})
			if err == nil && vm.Status != api.StatusRunning {
				err = fmt.Errorf("vm %s is %s", vm.Name, vm.Status)
			}
			took[i], errs[i] = time.Since(start), err
			if err == nil {
				// Its room for the next: a peer of the fleet takes 2 CPUs.
				errs[i] = cl.DeleteVM(ctx, api.DefaultNamespace, vm.Name)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, fmt.Errorf("deploys: %w", err)
	}
	slices.Sort(took)
	return took[n/2], took[min(n-1, n*99/100)], nil
}

// phaseOf polls the leader's node list until node is in phase, bounded
// by wait.
func phaseOf(ctx context.Context, c *chaos.Cluster, from int, node, phase string, wait time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		nodes, err := c.Client(from, opTimeout).ListNodes(wctx, api.DefaultNamespace, false)
		if err == nil {
			for _, nd := range nodes {
				if nd.Name == node && nd.Phase == phase {
					return nil
				}
			}
		}
		if err := sleep(wctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("node %s never %s: %w", node, phase, err)
		}
	}
}

// join starts host i, which never ran, and times it to READY.
func join(ctx context.Context, c *chaos.Cluster, leader, i int) (time.Duration, error) {
	start := time.Now()
	if err := c.Start(ctx, i); err != nil {
		return 0, err
	}
	if err := phaseOf(ctx, c, leader, c.Name(i), api.PhaseReady, joinWait); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// killHost kills host i and times its node to NOT READY on the leader.
func killHost(ctx context.Context, c *chaos.Cluster, leader, i int) (time.Duration, error) {
	start := time.Now()
	if err := c.Signal(i, syscall.SIGKILL); err != nil {
		return 0, err
	}
	if err := phaseOf(ctx, c, leader, c.Name(i), api.PhaseNotReady, notReadyWait); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// killLeader kills the leader and times the first write accepted through
// peer via (a follower).
func killLeader(ctx context.Context, c *chaos.Cluster, leader, via int) (time.Duration, error) {
	start := time.Now()
	if err := c.Signal(leader, syscall.SIGKILL); err != nil {
		return 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, failoverWait)
	defer cancel()
	cl := c.Client(via, time.Second)
	for k := 0; ; k++ {
		if _, err := cl.TagNode(wctx, api.DefaultNamespace, c.Name(via), fmt.Sprintf("after-%d", k%4)); err == nil {
			return time.Since(start), nil
		}
		if err := sleep(wctx, 20*time.Millisecond); err != nil {
			return 0, fmt.Errorf("no write accepted after the leader's death: %w", err)
		}
	}
}
