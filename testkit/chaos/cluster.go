package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/svc-project/svc/api"
)

// Cluster is an svc cluster in network namespaces, run by
// scripts/local-cluster.sh: peer i (1-based) is peer-i at 10.213.0.(10+i).
type Cluster struct {
	// Script is scripts/local-cluster.sh; Bin the svc binary; Dir the
	// cluster's state and logs.
	Script, Bin, Dir string
	// N is the number of peers.
	N int
	// AgentArgs are more agent flags (after --hypervisor fake).
	AgentArgs string
	// Started is how many of the N peers Up starts (0: all); the others
	// join later (Start), as new hosts do.
	Started int
	token   string
}

// Subnet is the network the script puts peers on; .1 is this host.
const (
	Subnet   = "10.213.0.0/24"
	HostAddr = "10.213.0.1"
)

// Addr is peer i's address.
func (c *Cluster) Addr(i int) string { return fmt.Sprintf("10.213.0.%d", 10+i) }

// Name is peer i's node name.
func (c *Cluster) Name(i int) string { return fmt.Sprintf("peer-%d", i) }

// Token is the admin token of the cluster.
func (c *Cluster) Token() string { return c.token }

// Client returns an admin client of peer i, with no retries of its own.
func (c *Cluster) Client(i int, timeout time.Duration) *api.Client {
	cl := api.NewClient("http://"+c.Addr(i)+":8080", c.token)
	cl.HTTP.Timeout = timeout
	return cl
}

func (c *Cluster) script(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, c.Script, args...)
	cmd.Env = append(os.Environ(), "SVC_LOCAL_DIR="+c.Dir, "SVC_BIN="+c.Bin, "SVC_AGENT_ARGS=--hypervisor fake "+c.AgentArgs, "SVC_TOKEN=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(c.Script), strings.Join(args, " "), err, out)
	}
	return nil
}

// Up starts the cluster and reads its admin token.
func (c *Cluster) Up(ctx context.Context) error {
	started := c.N
	if c.Started > 0 {
		started = c.Started
	}
	if err := c.script(ctx, "up", strconv.Itoa(c.N), strconv.Itoa(started)); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(c.Dir, "admin.token"))
	if err != nil {
		return fmt.Errorf("admin token: %w", err)
	}
	c.token = strings.TrimSpace(string(b))
	return nil
}

// Down stops the cluster and removes its namespaces.
func (c *Cluster) Down() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return c.script(ctx, "down")
}

// SaveLogs copies the peers' logs to dir.
func (c *Cluster) SaveLogs(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := 1; i <= c.N; i++ {
		b, err := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("peer-%d.log", i)))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("peer-%d.log", i)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Start starts peer i again from its data dir.
func (c *Cluster) Start(ctx context.Context, i int) error {
	return c.script(ctx, "start", strconv.Itoa(i))
}

func (c *Cluster) pid(i int) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.Dir, fmt.Sprintf("peer-%d.pid", i)))
	if err != nil {
		return 0, fmt.Errorf("pid of peer %d: %w", i, err)
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Signal sends sig to peer i's agent.
func (c *Cluster) Signal(i int, sig syscall.Signal) error {
	pid, err := c.pid(i)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("signal %v to peer %d: %w", sig, i, err)
	}
	return nil
}

// WaitExit waits (bounded by ctx) until peer i's agent has exited.
func (c *Cluster) WaitExit(ctx context.Context, i int) error {
	pid, err := c.pid(i)
	if err != nil {
		return err
	}
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("peer %d did not exit: %w", i, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Cut drops peer i's traffic with the other peers inside its namespace:
// inbound, outbound or both (this host, where the clients run, still
// reaches it).
func (c *Cluster) Cut(ctx context.Context, i int, in, out bool) error {
	rules := "add table inet svcchaos\n" +
		"add chain inet svcchaos in { type filter hook input priority 0 ; policy accept ; }\n" +
		"add chain inet svcchaos out { type filter hook output priority 0 ; policy accept ; }\n"
	if in {
		rules += "add rule inet svcchaos in ip saddr " + Subnet + " ip saddr != " + HostAddr + " drop\n"
	}
	if out {
		rules += "add rule inet svcchaos out ip daddr " + Subnet + " ip daddr != " + HostAddr + " drop\n"
	}
	return c.nft(ctx, i, rules)
}

// Heal removes peer i's cut.
func (c *Cluster) Heal(ctx context.Context, i int) error {
	return c.nft(ctx, i, "delete table inet svcchaos\n")
}

func (c *Cluster) nft(ctx context.Context, i int, rules string) error {
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", fmt.Sprintf("svc-peer-%d", i), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft on peer %d: %w: %s", i, err, out)
	}
	return nil
}

// Leader returns the index of the peer that leads, as the first peer that
// answers says (0 when none does).
func (c *Cluster) Leader(ctx context.Context) int {
	for i := 1; i <= c.N; i++ {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := c.Client(i, time.Second).ClusterInfo(cctx)
		cancel()
		if err == nil && info.Leader != "" {
			if n, err := strconv.Atoi(strings.TrimPrefix(info.Leader, "peer-")); err == nil {
				return n
			}
		}
	}
	return 0
}

// WaitWhole waits until every peer answers an authenticated read and lists
// every node READY.
func (c *Cluster) WaitWhole(ctx context.Context) error {
	for {
		err := c.whole(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster is not whole: %w", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (c *Cluster) whole(ctx context.Context) error {
	for i := 1; i <= c.N; i++ {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		nodes, err := c.Client(i, 2*time.Second).ListNodes(cctx, api.DefaultNamespace, false)
		cancel()
		if err != nil {
			return fmt.Errorf("peer %d: %w", i, err)
		}
		ready := 0
		for _, n := range nodes {
			if n.Phase == api.PhaseReady {
				ready++
			}
		}
		if ready != c.N {
			return fmt.Errorf("peer %d sees %d of %d nodes READY", i, ready, c.N)
		}
	}
	return nil
}

// isDialError reports whether a request failed before it was sent.
func isDialError(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}
