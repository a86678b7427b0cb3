// Command svc-chaos runs a chaos test of svc: a cluster of real agents in
// network namespaces, concurrent clients, and a nemesis that kills,
// restarts, pauses and partitions peers; then it checks the history (see
// package testkit/chaos) and prints a report. It needs root. Exit status 1
// when an acknowledged write was lost, the history is not linearizable, a
// restarted peer served stale state or refused a good token.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/svc-project/svc/testkit/chaos"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "svc-chaos:", err)
		os.Exit(1)
	}
}

func run() error {
	cfg := chaos.Config{}
	var seed int64
	flag.IntVar(&cfg.Peers, "peers", 3, "peers in the cluster")
	flag.IntVar(&cfg.Clients, "clients", 8, "concurrent clients")
	flag.DurationVar(&cfg.Duration, "duration", time.Minute, "how long the clients and the nemesis run")
	flag.Int64Var(&seed, "seed", 0, "seed of the clients' and the nemesis's choices (0: from the clock, printed)")
	flag.DurationVar(&cfg.Quiet[0], "quiet-min", 2*time.Second, "shortest pause between faults")
	flag.DurationVar(&cfg.Quiet[1], "quiet-max", 6*time.Second, "longest pause between faults")
	flag.DurationVar(&cfg.Hold[0], "hold-min", 2*time.Second, "shortest fault")
	flag.DurationVar(&cfg.Hold[1], "hold-max", 8*time.Second, "longest fault")
	flag.StringVar(&cfg.Script, "script", "scripts/local-cluster.sh", "the script that runs the cluster")
	flag.StringVar(&cfg.Bin, "bin", "bin/svc", "the svc binary")
	flag.StringVar(&cfg.Dir, "dir", "/tmp/svc-chaos", "the cluster's state and logs")
	flag.StringVar(&cfg.Out, "out", "build/chaos", "where the history, the report and any violation's visualization go")
	flag.Parse()
	if os.Geteuid() != 0 {
		return errors.New("needs root (network namespaces, nft)")
	}
	if cfg.Peers < 1 || cfg.Clients < 1 || cfg.Quiet[0] > cfg.Quiet[1] || cfg.Hold[0] > cfg.Hold[1] {
		return errors.New("peers and clients must be positive, and each min at most its max")
	}
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	cfg.Seed = uint64(seed)
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := chaos.Run(ctx, cfg)
	if rep != nil {
		fmt.Print(rep)
		fmt.Printf("artifacts: %s\n", cfg.Out)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("the run found a fault (seed %d)", cfg.Seed)
	}
	return nil
}
