// Command svc-fleet measures svc as a fleet grows (package testkit/fleet):
// at each size of -peers, a cluster of real agents with the fake hypervisor
// in network namespaces, its writes, idle cost, deploys, joins and
// failures measured; then the table of the points and of a model fitted to
// them at the sizes of -model. It needs root.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/svc-project/svc/testkit/fleet"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "svc-fleet:", err)
		os.Exit(1)
	}
}

// maxPeers is local-cluster.sh's bound (its addresses: one /24).
const maxPeers = 199

func sizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 3 || n > maxPeers {
			return nil, fmt.Errorf("size %q: want 3 to %d", f, maxPeers)
		}
		out = append(out, n)
	}
	return out, nil
}

func run() error {
	cfg := fleet.Config{Log: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	var peers, model, out string
	flag.StringVar(&peers, "peers", "3,25,50", "fleet sizes to measure, comma-separated (3 to 199)")
	flag.StringVar(&model, "model", "100,1000,5000", "fleet sizes the model extrapolates to")
	flag.StringVar(&cfg.Script, "script", "scripts/local-cluster.sh", "the local cluster script")
	flag.StringVar(&cfg.Bin, "bin", "bin/svc", "the svc binary")
	flag.StringVar(&cfg.Dir, "dir", "/tmp/svc-fleet", "the peers' state and logs")
	flag.StringVar(&out, "out", "build/fleet.txt", "where the table is written too")
	flag.IntVar(&cfg.Clients, "clients", 16, "clients writing through the leader")
	flag.DurationVar(&cfg.WriteFor, "write-for", 20*time.Second, "how long the clients write")
	flag.DurationVar(&cfg.Settle, "settle", 10*time.Second, "pause after the fleet formed, before the idle measurement")
	flag.DurationVar(&cfg.Idle, "idle", 10*time.Second, "how long the leader's idle CPU is measured")
	flag.IntVar(&cfg.Deploys, "deploys", 40, "deploys timed to Running, 4 at a time")
	flag.StringVar(&cfg.AgentArgs, "agent-args", "", "more flags for every agent, e.g. \"--raft-replicas 2\"")
	flag.Parse()
	ns, err := sizes(peers)
	if err != nil {
		return err
	}
	var ms []int
	if model != "" {
		for _, f := range strings.Split(model, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("-model %q: want fleet sizes", model)
			}
			ms = append(ms, n)
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (network namespaces)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A size that fails ends the run (a larger one fails too): the table
	// still shows what was measured, and says where and why it stopped.
	var points []fleet.Point
	var failed error
	for _, n := range ns {
		p, err := fleet.Measure(ctx, cfg, n)
		if err != nil {
			failed = err
			break
		}
		points = append(points, p)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "svc-fleet %s: %d clients for %s, %d deploys, fake hypervisor, one process a peer, agents %q\n", time.Now().UTC().Format(time.DateOnly), cfg.Clients, cfg.WriteFor, cfg.Deploys, "--hypervisor fake "+cfg.AgentArgs)
	fleet.Table(&b, points, ms)
	if failed != nil {
		fmt.Fprintf(&b, "stopped: %v\n", failed)
	}
	fmt.Print(b.String())
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return failed
}
