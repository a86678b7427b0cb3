package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v88/github"
)

// Scope is where runners register: an organisation, or one repository of it.
type Scope struct {
	Owner string
	// Repo is empty for an organisation's runners.
	Repo string
}

func (s Scope) String() string {
	if s.Repo == "" {
		return s.Owner
	}
	return s.Owner + "/" + s.Repo
}

// ParseScope reads an organisation's or a repository's web address
// (https://github.com/acme, https://ghe.example.com/acme/app).
func ParseScope(raw string) (Scope, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return Scope{}, fmt.Errorf("%q is not the web address of an organisation or a repository (https://github.com/ORG[/REPO])", raw)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	switch {
	case len(parts) == 1 && parts[0] != "":
		return Scope{Owner: parts[0]}, nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return Scope{Owner: parts[0], Repo: parts[1]}, nil
	}
	return Scope{}, fmt.Errorf("%q names neither an organisation nor a repository (https://github.com/ORG[/REPO])", raw)
}

// Auth is how the pool authenticates: a GitHub App installation (AppID,
// InstallationID, PrivateKey in PEM) or a fine-grained token.
type Auth struct {
	Token          string
	AppID          int64
	InstallationID int64
	PrivateKey     []byte
}

// Config configures a Client.
type Config struct {
	// APIBase is the REST API's address: https://api.github.com/ (the
	// default) or a GitHub Enterprise Server's https://HOST/api/v3/.
	APIBase string
	Scope   Scope
	Auth    Auth
	// Transport carries the requests (the peer's egress policy); nil: the
	// default transport.
	Transport http.RoundTripper
	// Timeout bounds each request (default 15 s).
	Timeout time.Duration
}

// Client talks to one scope of GitHub.
type Client struct {
	gh    *gh.Client
	scope Scope
	lim   *limits
	sweep sweepState
}

// New returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.Scope.Owner == "" {
		return nil, errors.New("github: no organisation or repository")
	}
	tr := cfg.Transport
	if tr == nil {
		tr = http.DefaultTransport
	}
	base := cfg.APIBase
	if base == "" {
		base = "https://api.github.com/"
	}
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	switch a := cfg.Auth; {
	case a.AppID != 0 || a.InstallationID != 0 || len(a.PrivateKey) > 0:
		if a.AppID == 0 || a.InstallationID == 0 || len(a.PrivateKey) == 0 {
			return nil, errors.New("github: a GitHub App needs its app id, installation id and private key")
		}
		itr, err := ghinstallation.New(tr, a.AppID, a.InstallationID, a.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("github: the App's private key: %w", err)
		}
		itr.BaseURL = strings.TrimRight(base, "/")
		tr = itr
	case a.Token != "":
		tok := a.Token
		next := tr
		tr = roundTripper(func(r *http.Request) (*http.Response, error) {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+tok)
			return next.RoundTrip(r)
		})
	default:
		return nil, errors.New("github: no credentials: a GitHub App (app id, installation id, private key) or a token")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	c, err := gh.NewClient(gh.WithHTTPClient(&http.Client{Transport: tr, Timeout: timeout}), gh.WithURLs(&base, &base), gh.WithUserAgent("svc"),
		// The limits are this package's (limits.go): go-github's own hold
		// after a secondary limit without Retry-After lasts until the
		// primary limit's reset (up to an hour), where GitHub asks for a
		// minute.
		gh.WithDisableRateLimitCheck())
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return &Client{gh: c, scope: cfg.Scope, lim: newLimits()}, nil
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// JITConfig asks for a just-in-time configuration of a runner named name
// with labels: what the runner in the job's VM starts with (run.sh
// --jitconfig), good for one job. It returns the runner's id and the
// encoded configuration.
func (c *Client) JITConfig(ctx context.Context, name string, labels []string, runnerGroupID int64) (int64, string, error) {
	if runnerGroupID == 0 {
		runnerGroupID = 1 // the default group
	}
	req := &gh.GenerateJITConfigRequest{Name: name, RunnerGroupID: runnerGroupID, Labels: labels}
	var cfg *gh.JITRunnerConfig
	err := c.call(ctx, write, func() (resp *gh.Response, err error) {
		if c.scope.Repo == "" {
			cfg, resp, err = c.gh.Actions.GenerateOrgJITConfig(ctx, c.scope.Owner, req)
		} else {
			cfg, resp, err = c.gh.Actions.GenerateRepoJITConfig(ctx, c.scope.Owner, c.scope.Repo, req)
		}
		return resp, err
	})
	if err != nil {
		return 0, "", fmt.Errorf("github: a just-in-time runner for %s: %w", c.scope, err)
	}
	if cfg.GetRunner().GetID() == 0 || cfg.GetEncodedJITConfig() == "" {
		return 0, "", fmt.Errorf("github: the just-in-time configuration for %s has no runner or no configuration", c.scope)
	}
	return cfg.GetRunner().GetID(), cfg.GetEncodedJITConfig(), nil
}

// RunnerNamed finds the runner of a name through GitHub's name filter of
// the runners list (one read of the sweep's budget); found is false when
// there is none.
func (c *Client) RunnerNamed(ctx context.Context, name string) (id int64, busy, found bool, err error) {
	opts := &gh.ListRunnersOptions{Name: &name, ListOptions: gh.ListOptions{PerPage: 10}}
	var rs *gh.Runners
	err = c.call(ctx, sweepRead, func() (resp *gh.Response, err error) {
		if c.scope.Repo == "" {
			rs, resp, err = c.gh.Actions.ListOrganizationRunners(ctx, c.scope.Owner, opts)
		} else {
			rs, resp, err = c.gh.Actions.ListRunners(ctx, c.scope.Owner, c.scope.Repo, opts)
		}
		return resp, err
	})
	if err != nil {
		return 0, false, false, fmt.Errorf("github: the runner named %s of %s: %w", name, c.scope, err)
	}
	for _, r := range rs.Runners {
		if r.GetName() == name {
			return r.GetID(), r.GetBusy(), true, nil
		}
	}
	return 0, false, false, nil
}

// ErrRunnerBusy is GitHub refusing to remove a runner that runs a job
// (422).
var ErrRunnerBusy = errors.New("github: the runner is running a job")

// RemoveRunner unregisters a runner; one already gone is no error, one
// that runs a job is ErrRunnerBusy.
func (c *Client) RemoveRunner(ctx context.Context, id int64) error {
	var resp *gh.Response
	err := c.call(ctx, write, func() (r *gh.Response, err error) {
		if c.scope.Repo == "" {
			resp, err = c.gh.Actions.RemoveOrganizationRunner(ctx, c.scope.Owner, id)
		} else {
			resp, err = c.gh.Actions.RemoveRunner(ctx, c.scope.Owner, c.scope.Repo, id)
		}
		return resp, err
	})
	if errors.Is(err, ErrLimited) {
		return fmt.Errorf("github: remove runner %d of %s: %w", id, c.scope, err)
	}
	if err != nil && resp != nil && resp.StatusCode == http.StatusUnprocessableEntity {
		return fmt.Errorf("remove runner %d of %s: %w (%w)", id, c.scope, ErrRunnerBusy, err)
	}
	if err != nil && !(resp != nil && resp.StatusCode == http.StatusNotFound) {
		return fmt.Errorf("github: remove runner %d of %s: %w", id, c.scope, err)
	}
	return nil
}
