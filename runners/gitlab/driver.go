package gitlab

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
)

// Driver runs the custom executor's stages against a cluster.
type Driver struct {
	Client *api.Client
	// Namespace the jobs' VMs are deployed in.
	Namespace string
	// VMConfig or Image the VMs are deployed from, unless the job's
	// variables SVC_VMCONFIG or SVC_IMAGE name another.
	VMConfig, Image string
	// Shell runs the job's scripts in the guest: "auto" (the default:
	// bash where the guest has it, else sh) or a program; the job's
	// SVC_SHELL wins.
	Shell string
	// BuildsDir and CacheDir are the directories in the guest gitlab-runner
	// uses (default /builds and /cache).
	BuildsDir, CacheDir string
	// Getenv reads the stage's environment (default os.Getenv).
	Getenv func(string) string
	// Stdout and Stderr receive what the stages print (the job's log).
	Stdout, Stderr io.Writer
	// Version names the driver in config's answer.
	Version string
	// AgentWait bounds prepare's wait for the guest's agent (default 3 min).
	AgentWait time.Duration
	// Grace is how long run waits, once told to stop (SIGTERM: the job
	// was cancelled or timed out), between TERM and KILL to the script's
	// processes in the guest (default 10 s).
	Grace time.Duration
}

// BuildFailure is a stage that failed because the job's script did: the
// runner reports it as the job's failure.
type BuildFailure struct{ Code int }

func (e BuildFailure) Error() string {
	return fmt.Sprintf("the job's script exited with status %d", e.Code)
}

// ExitCode is the status a stage exits with: 0, $BUILD_FAILURE_EXIT_CODE for
// a build failure (after writing the script's status to
// $BUILD_EXIT_CODE_FILE, when set), else $SYSTEM_FAILURE_EXIT_CODE (1 and 2
// when the runner set none).
func ExitCode(err error, getenv func(string) string) int {
	if err == nil {
		return 0
	}
	code := func(name string, def int) int {
		if n, e := strconv.Atoi(getenv(name)); e == nil {
			return n
		}
		return def
	}
	var bf BuildFailure
	if errors.As(err, &bf) {
		if f := getenv("BUILD_EXIT_CODE_FILE"); f != "" {
			_ = os.WriteFile(f, []byte(strconv.Itoa(bf.Code)), 0o600)
		}
		return code("BUILD_FAILURE_EXIT_CODE", 1)
	}
	return code("SYSTEM_FAILURE_EXIT_CODE", 2)
}

func (d *Driver) env(name string) string {
	get := d.Getenv
	if get == nil {
		get = os.Getenv
	}
	return get(name)
}

// job reads one of the job's variables (CUSTOM_ENV_<name>).
func (d *Driver) job(name string) string { return d.env("CUSTOM_ENV_" + name) }

// The job's own values, which gitlab-runner passes to every stage after
// config from config's job_env: names no job's variable can set (those
// arrive as CUSTOM_ENV_*).
const (
	// EnvVM names the job's VM.
	EnvVM = "SVC_GITLAB_VM"
	// EnvKey is the job's secret: its VM carries its hash (MetaKey), and a
	// stage touches no VM that does not.
	EnvKey = "SVC_GITLAB_KEY"
	// MetaKey is the custom metadata of the job's VM that holds the hash
	// of the job's key.
	MetaKey = "gitlab-executor-key"
)

// NewJob names a job's VM and makes its key, at config: "gl-", the
// runner's short token, the job's id (for people to read: a job can set
// its own CI_JOB_ID variable) and a random part, so that no two jobs, of
// one runner or many, meet at one VM.
func (d *Driver) NewJob() (vm, key string, err error) {
	id := d.jobID()
	if id == "" {
		return "", "", errors.New("no job id (CUSTOM_ENV_CI_JOB_ID or JOB_RESPONSE_FILE's id): run this as gitlab-runner's custom executor")
	}
	name := "gl-"
	if tok := clean(d.job("CI_RUNNER_SHORT_TOKEN")); tok != "" {
		name += tok + "-"
	}
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	return name + id + "-" + hex.EncodeToString(b[:4]), hex.EncodeToString(b[4:]), nil
}

// jobID is the job's id: the one in gitlab-runner's job response file
// when it passes one (JOB_RESPONSE_FILE), else the job's CI_JOB_ID.
func (d *Driver) jobID() string {
	if f := d.env("JOB_RESPONSE_FILE"); f != "" {
		if b, err := os.ReadFile(f); err == nil {
			var resp struct {
				ID int64 `json:"id"`
			}
			if json.Unmarshal(b, &resp) == nil && resp.ID > 0 {
				return strconv.FormatInt(resp.ID, 10)
			}
		}
	}
	id := d.job("CI_JOB_ID")
	if len(id) > 20 || strings.Trim(id, "0123456789") != "" {
		return ""
	}
	return id
}

// VMName is the job's VM, as config named it (EnvVM).
func (d *Driver) VMName() (string, error) {
	name := d.env(EnvVM)
	if name == "" || d.env(EnvKey) == "" {
		return "", fmt.Errorf("no %s or %s: set config_exec to 'svc gitlab-executor config', whose job_env names the job's VM and its key (gitlab-runner 13.1 or later)", EnvVM, EnvKey)
	}
	if err := api.ValidateName("VM", name, api.MaxNameLen); err != nil {
		return "", fmt.Errorf("%s: %w", EnvVM, err)
	}
	return name, nil
}

// clean keeps the lowercase letters and digits of s, at most 16.
func clean(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') && b.Len() < 16 {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// keyHash is what the job's VM carries of its key.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte("svc gitlab-executor key\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// ownVM returns the job's VM, refusing one this job did not make (its key
// is not the VM's); a VM that is gone is api's 404.
func (d *Driver) ownVM(ctx context.Context) (string, error) {
	name, err := d.VMName()
	if err != nil {
		return "", err
	}
	vm, err := d.Client.GetVM(ctx, d.Namespace, name)
	if err != nil {
		return name, err
	}
	if got := vm.CustomMetadata[MetaKey]; subtle.ConstantTimeCompare([]byte(got), []byte(keyHash(d.env(EnvKey)))) != 1 {
		return name, fmt.Errorf("VM %s was not made by this job (its %s does not match the job's key): not touching it", name, MetaKey)
	}
	return name, nil
}

// Config prints what gitlab-runner asks of the driver, and names the job's
// VM and key in job_env for the stages after it.
func (d *Driver) Config(_ context.Context) error {
	name, key, err := d.NewJob()
	if err != nil {
		return err
	}
	out := map[string]any{
		"builds_dir": first(d.BuildsDir, "/builds"), "cache_dir": first(d.CacheDir, "/cache"),
		"builds_dir_is_shared": false, "hostname": name,
		"driver":  map[string]string{"name": "svc", "version": first(d.Version, "dev")},
		"job_env": map[string]string{EnvVM: name, EnvKey: key},
	}
	return json.NewEncoder(d.Stdout).Encode(out)
}

// Prepare deploys the job's VM and waits until its agent runs commands.
// Its name is new to this job (config made it): a VM of that name already
// there is replaced only when it carries this job's key (an earlier try of
// this prepare); another's is not touched, and the deploy fails.
func (d *Driver) Prepare(ctx context.Context) error {
	name, err := d.ownVM(ctx)
	switch {
	case err == nil: // an earlier try of this job's prepare left it
		fmt.Fprintf(d.Stdout, "svc: replacing VM %s, left by an earlier try of this job's prepare\n", name)
		if err := d.Client.DeleteVM(ctx, d.Namespace, name); err != nil && api.CodeOf(err) != http.StatusNotFound {
			return fmt.Errorf("delete VM %s: %w", name, err)
		}
	case api.CodeOf(err) != http.StatusNotFound:
		return err
	}
	req := api.DeployRequest{Name: name, VMConfig: first(d.job("SVC_VMCONFIG"), d.VMConfig), CustomMetadata: map[string]string{
		"gitlab-job": d.jobID(), "gitlab-project": d.job("CI_PROJECT_PATH"), "gitlab-pipeline": d.job("CI_PIPELINE_ID"),
		MetaKey: keyHash(d.env(EnvKey)),
	}}
	if req.VMConfig == "" {
		req.Image = first(d.job("SVC_IMAGE"), d.Image)
	}
	if req.VMConfig == "" && req.Image == "" {
		return errors.New("no VM config or image: give --vmconfig or --image, or the job variable SVC_VMCONFIG or SVC_IMAGE")
	}
	for k, v := range req.CustomMetadata {
		if v == "" || len(v) > 256 {
			delete(req.CustomMetadata, k)
		}
	}
	// The VM dies with the job: its timeout, and 5 minutes for the
	// after_script, the uploads and cleanup.
	if t, err := strconv.Atoi(d.job("CI_JOB_TIMEOUT")); err == nil && t > 0 && t <= 7*24*3600 {
		req.TTL = (time.Duration(t)*time.Second + 5*time.Minute).String()
	}
	fmt.Fprintf(d.Stdout, "svc: deploying VM %s in namespace %s from %s\n", name, d.Namespace, first(req.VMConfig, req.Image))
	start := time.Now()
	vm, err := d.Client.DeployVM(ctx, d.Namespace, req)
	if err != nil {
		return fmt.Errorf("deploy the job's VM: %w", err)
	}
	wait := d.AgentWait
	if wait <= 0 {
		wait = 3 * time.Minute
	}
	if err := d.Client.WaitGuestReady(ctx, d.Namespace, name, wait); err != nil {
		return err
	}
	fmt.Fprintf(d.Stdout, "svc: VM %s runs on node %s (%s), ready in %s\n", name, vm.Node, vm.IP, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// Cleanup deletes the job's VM; one already gone is no error, one another
// job made is not touched.
func (d *Driver) Cleanup(ctx context.Context) error {
	name, err := d.ownVM(ctx)
	if api.CodeOf(err) == http.StatusNotFound {
		fmt.Fprintf(d.Stdout, "svc: VM %s is gone already\n", name)
		return nil
	}
	if err != nil {
		return err
	}
	if err := d.Client.DeleteVM(ctx, d.Namespace, name); err != nil && api.CodeOf(err) != http.StatusNotFound {
		return fmt.Errorf("delete VM %s: %w", name, err)
	}
	fmt.Fprintf(d.Stdout, "svc: VM %s deleted\n", name)
	return nil
}

func first(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}
