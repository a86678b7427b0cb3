package runnerpool

import (
	"context"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/auth"
	"github.com/svc-project/svc/internal/backoff"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/runners/github"
)

// Metadata keys on a pool's VMs.
const (
	MetaPool = "svc-runner-pool"
	MetaJob  = "svc-runner-job"
)

// ServiceAccount is the account a pool acts as in its namespace.
func ServiceAccount(pool string) string { return "runner-" + pool }

// VMName is the VM of a pool's job at its attempt-th claim (each claim
// makes a new VM: the VM of an earlier one may still run another job).
func VMName(pool string, job int64, attempt int) string {
	id := strconv.FormatInt(job, 10)
	if attempt > 1 {
		id += "-r" + strconv.Itoa(attempt)
	}
	if max := api.MaxNameLen - len(id) - 1; len(pool) > max {
		pool = strings.TrimRight(pool[:max], "-")
	}
	return pool + "-" + id
}

// DefaultAgentWait bounds the wait for a new VM's agent unless Config says
// otherwise.
const DefaultAgentWait = 3 * time.Minute

// Config configures a Controller.
type Config struct {
	FSM *raftfsm.FSM
	// Apply proposes a command (on the leader).
	Apply func(ctx context.Context, t raftfsm.Type, body any) (any, error)
	Keys  auth.Keys
	// APIURL is this peer's API, which the pools call as their accounts.
	APIURL func() string
	// Transport reaches GitHub (the peer's egress policy).
	Transport http.RoundTripper
	// PollInterval is how often a pool asks GitHub for queued jobs and for
	// the jobs that run (default 30 s).
	PollInterval time.Duration
	// Tick is the longest time between passes (default 2 s).
	Tick time.Duration
	// AgentWait bounds the wait for a new VM's agent (default
	// DefaultAgentWait).
	AgentWait time.Duration
	Log       *slog.Logger
	Metrics   *Metrics
}

// Controller runs the pools while its peer leads.
type Controller struct {
	cfg Config

	mu       sync.Mutex
	starting map[string]bool // "namespace/VM" being started by this leader
	polled   map[string]time.Time
	clients  map[string]*poolClient
	backoffs *backoff.Keyed       // by "namespace/pool"
	checked  map[string]time.Time // "namespace/pool/job": when the sweep last asked GitHub of it
}

type poolClient struct {
	pool raftfsm.RunnerPool
	gh   *github.Client
}

// New returns a Controller.
func New(cfg Config) *Controller {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 30 * time.Second
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 2 * time.Second
	}
	if cfg.AgentWait <= 0 {
		cfg.AgentWait = DefaultAgentWait
	}
	return &Controller{cfg: cfg, starting: map[string]bool{}, backoffs: &backoff.Keyed{First: backoffFirst, Most: backoffMost, Jitter: true}, checked: map[string]time.Time{}}
}

// Run runs the pools until ctx ends (the end of the leader's term).
func (c *Controller) Run(ctx context.Context) {
	c.mu.Lock()
	// starting is kept across terms: a start of this peer's last term may
	// still be ending (it fails on its own, its context gone).
	c.polled, c.clients = map[string]time.Time{}, map[string]*poolClient{}
	c.backoffs.Reset()
	c.checked = map[string]time.Time{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c.pass(ctx, &wg)
		select {
		case <-ctx.Done():
			return
		case <-c.cfg.FSM.Watch(raftfsm.ResourceTopic(raftfsm.ResourceRunner)):
		case <-time.After(c.cfg.Tick):
		}
	}
}

func vmKey(j raftfsm.RunnerJob) string { return j.Namespace + "/" + j.VM }

func poolKey(p raftfsm.RunnerPool) string { return p.Namespace + "/" + p.Name }

// pass does one round over every pool.
func (c *Controller) pass(ctx context.Context, wg *sync.WaitGroup) {
	pools := c.cfg.FSM.RunnerPools("")
	for _, p := range pools {
		if err := c.pool(ctx, wg, p); err != nil {
			c.cfg.Log.Warn("runner pool", "namespace", p.Namespace, "pool", p.Name, "err", err)
		}
	}
	c.orphans(ctx)
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.observe(c.cfg.FSM)
	}
}

// pool moves one pool's jobs on.
func (c *Controller) pool(ctx context.Context, wg *sync.WaitGroup, p raftfsm.RunnerPool) error {
	cl, err := c.client(p)
	if err != nil {
		return err
	}
	jobs := c.cfg.FSM.RunnerJobs(p.Namespace, p.Name)
	now := time.Now()
	_, held := cl.HeldUntil() // GitHub's rate limit: no call until it passes
	c.mu.Lock()
	due := !held && now.Sub(c.polled[poolKey(p)]) >= c.cfg.PollInterval
	if due {
		c.polled[poolKey(p)] = now
	}
	c.mu.Unlock()
	if due {
		c.sweep(ctx, p, cl, jobs)
		jobs = c.cfg.FSM.RunnerJobs(p.Namespace, p.Name)
	}
	active := 0
	var queued []raftfsm.RunnerJob
	for _, j := range jobs {
		switch j.State {
		case raftfsm.RunnerJobQueued:
			queued = append(queued, j)
		case raftfsm.RunnerJobStarting:
			active++
			c.mu.Lock()
			mine := c.starting[vmKey(j)]
			c.mu.Unlock()
			if !mine {
				// Left starting by another leader (or by a start whose last
				// word was lost): its VM may be half made and its runner
				// never started. Start again from queued.
				c.undo(ctx, p, cl, j, "queued again: its start was left unfinished (a change of leader, or GitHub or the API unreachable)")
			}
		case raftfsm.RunnerJobRunning:
			active++
		case raftfsm.RunnerJobCompleted:
			active++
			c.finish(ctx, p, cl, j)
		}
	}
	if held || c.backoffs.Waiting(poolKey(p), now) {
		// Each start asks GitHub for a runner, or failed a moment ago:
		// the queued jobs wait their turn (the job's message says why).
		return nil
	}
	slices.SortFunc(queued, func(a, b raftfsm.RunnerJob) int { return a.QueuedAt.Compare(b.QueuedAt) })
	for _, j := range queued {
		if active >= p.Max {
			break
		}
		j.State, j.VM = raftfsm.RunnerJobStarting, VMName(p.Name, j.ID, j.Attempts+1)
		if _, err := c.cfg.Apply(ctx, raftfsm.TypeRunnerJobUpdate, raftfsm.RunnerJobUpdate{Job: j, Time: time.Now().UTC()}); err != nil {
			continue // claimed meanwhile, or no leader: the next pass sees
		}
		active++
		c.mu.Lock()
		c.starting[vmKey(j)] = true
		c.mu.Unlock()
		wg.Go(func() {
			defer func() {
				c.mu.Lock()
				delete(c.starting, vmKey(j))
				c.mu.Unlock()
			}()
			c.start(ctx, p, cl, j)
		})
	}
	return nil
}

// client returns the pool's GitHub client, made again when the pool changed.
func (c *Controller) client(p raftfsm.RunnerPool) (*github.Client, error) {
	k := poolKey(p)
	c.mu.Lock()
	pc, ok := c.clients[k]
	c.mu.Unlock()
	if ok && pc.pool.CreatedAt.Equal(p.CreatedAt) {
		return pc.gh, nil
	}
	scope, err := github.ParseScope(p.GitHub.URL)
	if err != nil {
		return nil, err
	}
	a := github.Auth{AppID: p.GitHub.AppID, InstallationID: p.GitHub.InstallationID}
	open := func(sealed []byte, what string) (string, error) {
		if len(sealed) == 0 {
			return "", nil
		}
		b, err := auth.Unseal(c.cfg.Keys.SealKey(), sealed, SecretAAD(p.Namespace, p.Name, what))
		return string(b), err
	}
	tok, err := open(p.GitHub.SealedToken, "token")
	if err != nil {
		return nil, err
	}
	key, err := open(p.GitHub.SealedPrivateKey, "private-key")
	if err != nil {
		return nil, err
	}
	a.Token, a.PrivateKey = tok, []byte(key)
	if key == "" {
		a.PrivateKey = nil
	}
	gh, err := github.New(github.Config{APIBase: p.GitHub.APIBase, Scope: scope, Auth: a, Transport: egressNamed{c.cfg.Transport}})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.clients[k] = &poolClient{pool: p, gh: gh}
	c.mu.Unlock()
	return gh, nil
}

// SecretAAD binds a pool's sealed secret to the pool and its purpose.
func SecretAAD(ns, pool, what string) []byte {
	return []byte("svc-runner-pool/" + ns + "/" + pool + "/" + what)
}
