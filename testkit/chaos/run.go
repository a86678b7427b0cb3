package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/svc-project/svc/api"
)

// Config is one run.
type Config struct {
	Peers    int
	Clients  int
	Duration time.Duration
	Seed     uint64
	// Quiet and Hold bound the pause between faults and a fault's length.
	Quiet, Hold [2]time.Duration
	// Script is scripts/local-cluster.sh, Bin the svc binary; Dir holds the
	// cluster's state and logs, Out the run's artifacts (history, report,
	// and the visualization of a linearizability violation).
	Script, Bin, Dir, Out string
	Log                   *slog.Logger
}

// Report is what a run found.
type Report struct {
	Seed       uint64           `json:"seed"`
	Peers      int              `json:"peers"`
	Clients    int              `json:"clients"`
	Duration   string           `json:"duration"`
	Operations int              `json:"operations"`
	Reads      int              `json:"reads"`
	Writes     int              `json:"writes"`
	Acked      int              `json:"acknowledgedWrites"`
	Unknown    int              `json:"unknownWrites"`
	Outcomes   map[string]int64 `json:"outcomes"`
	Faults     map[string]int   `json:"faults"`
	OnLeader   int              `json:"faultsOnTheLeader"`
	Lost       int              `json:"acknowledgedWritesLost"`
	LostKeys   []string         `json:"lostKeys,omitempty"`
	// Linearizable is porcupine's verdict: Ok, Illegal or Unknown (timed out).
	Linearizable    string   `json:"linearizable"`
	NotLinearizable []string `json:"notLinearizableKeys,omitempty"`
	Probes          int      `json:"restartProbes"`
	Stale           int      `json:"staleAnswersAfterRestart"`
	StaleKeys       []string
	// Unauthorized counts good tokens answered 401 (by restarted peers).
	Unauthorized int `json:"unauthorizedAfterRestart"`
	// Unavailable per fault kind: p50 and max of the longest time without
	// a definite write answer during a fault and its recovery.
	Unavailable map[string][2]time.Duration `json:"unavailable"`
}

// OK reports whether the run found nothing wrong.
func (r *Report) OK() bool {
	return r.Lost == 0 && r.Linearizable != string(porcupine.Illegal) && r.Stale == 0 && r.Unauthorized == 0
}

// Run forms the cluster, runs clients and nemesis for cfg.Duration, heals,
// reads every key, tears the cluster down and checks the history.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	c := &Cluster{Script: cfg.Script, Bin: cfg.Bin, Dir: cfg.Dir, N: cfg.Peers}
	cfg.Log.Info("forming the cluster", "peers", cfg.Peers)
	if err := c.Up(ctx); err != nil {
		return nil, err
	}
	defer func() {
		if err := c.SaveLogs(filepath.Join(cfg.Out, "logs")); err != nil {
			cfg.Log.Error("keep the peers' logs", "err", err)
		}
		if err := c.Down(); err != nil {
			cfg.Log.Error("tear down", "err", err)
		}
	}()
	if err := UploadImage(ctx, c, "chaos"); err != nil {
		return nil, err
	}
	h := NewHistory()
	w := &Workload{C: c, History: h, Clients: cfg.Clients, Seed: cfg.Seed, Image: "chaos"}
	n := &Nemesis{C: c, W: w, Seed: cfg.Seed, Quiet: cfg.Quiet, Hold: cfg.Hold, Log: cfg.Log}
	cfg.Log.Info("running", "duration", cfg.Duration, "clients", cfg.Clients, "seed", cfg.Seed)
	rctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(rctx)
	}()
	n.Run(rctx)
	<-done
	cancel()
	n.Wait()
	wctx, wcancel := context.WithTimeout(ctx, 3*time.Minute)
	err := c.WaitWhole(wctx)
	leader := c.Leader(wctx)
	wcancel()
	if err != nil {
		return nil, err
	}
	w.FinalReads(max(leader, 1))
	return analyze(cfg, h.Ops(), n.Faults(), w)
}

// analyze checks a run's history and writes its artifacts.
func analyze(cfg Config, ops []Op, faults []Fault, w *Workload) (*Report, error) {
	r := &Report{Seed: cfg.Seed, Peers: cfg.Peers, Clients: cfg.Clients, Duration: cfg.Duration.String(),
		Outcomes: w.Counts(), Faults: map[string]int{}, Unavailable: map[string][2]time.Duration{}}
	for _, op := range ops {
		r.Operations++
		switch {
		case !op.IsWrite():
			r.Reads++
		case op.Result == Unknown:
			r.Writes++
			r.Unknown++
		default:
			r.Writes++
			r.Acked++
		}
	}
	for _, f := range faults {
		r.Faults[f.Kind]++
		if f.Leader {
			r.OnLeader++
		}
	}
	r.Lost, r.LostKeys = lost(ops)
	probes := w.Probes()
	r.Probes = len(probes)
	r.Stale, r.StaleKeys = stale(ops, probes)
	for _, p := range probes {
		r.Unauthorized += p.Unauthorized
	}
	gaps := unavailability(ops, faults, 10*time.Second, lastCall(ops))
	for _, kind := range FaultKinds {
		var ds []time.Duration
		for i, f := range faults {
			if f.Kind == kind {
				ds = append(ds, gaps[i])
			}
		}
		if len(ds) > 0 {
			r.Unavailable[kind] = [2]time.Duration{percentile(ds, 50), slices.Max(ds)}
		}
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return r, fmt.Errorf("artifacts: %w", err)
	}
	res, bad, err := linearizable(ops, 5*time.Minute, filepath.Join(cfg.Out, "linearizability.html"))
	r.Linearizable, r.NotLinearizable = string(res), bad
	if err != nil {
		return r, err
	}
	for name, v := range map[string]any{"history.json": ops, "faults.json": faults, "probes.json": probes, "report.json": r} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			return r, err
		}
		if err := os.WriteFile(filepath.Join(cfg.Out, name), b, 0o644); err != nil {
			return r, fmt.Errorf("artifacts: %w", err)
		}
	}
	return r, nil
}

// UploadImage makes a small qcow2 and uploads it for the VMs to use.
func UploadImage(ctx context.Context, c *Cluster, name string) error {
	p := filepath.Join(c.Dir, name+".qcow2")
	if out, err := exec.CommandContext(ctx, "qemu-img", "create", "-q", "-f", "qcow2", p, "16M").CombinedOutput(); err != nil {
		return fmt.Errorf("qemu-img: %w: %s", err, out)
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, _ := f.Stat()
	_, err = c.Client(1, time.Minute).UploadImage(ctx, api.DefaultNamespace, name, f, st.Size())
	return err
}

// String formats the report as the README shows it.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d, %d peers, %d clients, %s\n", r.Seed, r.Peers, r.Clients, r.Duration)
	fmt.Fprintf(&b, "operations:                %d (%d reads, %d writes)\n", r.Operations, r.Reads, r.Writes)
	fmt.Fprintf(&b, "acknowledged writes:       %d (%d more with an unknown outcome)\n", r.Acked, r.Unknown)
	var fs []string
	total := 0
	for _, k := range FaultKinds {
		fs = append(fs, fmt.Sprintf("%s %d", k, r.Faults[k]))
		total += r.Faults[k]
	}
	fmt.Fprintf(&b, "faults injected:           %d (%s; %d on the leader)\n", total, strings.Join(fs, ", "), r.OnLeader)
	fmt.Fprintf(&b, "acknowledged writes lost:  %d %v\n", r.Lost, r.LostKeys)
	fmt.Fprintf(&b, "linearizable:              %s %v\n", map[string]string{"Ok": "yes", "Illegal": "NO", "Unknown": "unknown (check timed out)"}[r.Linearizable], r.NotLinearizable)
	fmt.Fprintf(&b, "stale after restart:       %d answers (%d restarts probed; %d good tokens refused)\n", r.Stale, r.Probes, r.Unauthorized)
	fmt.Fprintf(&b, "unavailability (longest time without a definite write answer, p50 / max):\n")
	for _, k := range FaultKinds {
		if u, ok := r.Unavailable[k]; ok {
			fmt.Fprintf(&b, "  %-10s %6.2f s / %6.2f s\n", k, u[0].Seconds(), u[1].Seconds())
		}
	}
	keys := make([]string, 0, len(r.Outcomes))
	for k := range r.Outcomes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	fmt.Fprintf(&b, "outcomes:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-50s %d\n", k, r.Outcomes[k])
	}
	return b.String()
}
