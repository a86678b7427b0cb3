package gitlab

import (
	"context"
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
	// Shell runs the job's scripts in the guest (default bash; the job's
	// SVC_SHELL wins).
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

// VMName is the job's VM: "gl-" and the job's id, after the runner's short
// token when there is one (two runners' job ids never meet).
func (d *Driver) VMName() (string, error) {
	id := d.job("CI_JOB_ID")
	if id == "" || strings.Trim(id, "0123456789") != "" {
		return "", fmt.Errorf("CUSTOM_ENV_CI_JOB_ID is %q, not a job id: run this as gitlab-runner's custom executor", id)
	}
	name := "gl-"
	if tok := clean(d.job("CI_RUNNER_SHORT_TOKEN")); tok != "" {
		name += tok + "-"
	}
	return name + id, nil
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

// Config prints what gitlab-runner asks of the driver.
func (d *Driver) Config(_ context.Context) error {
	name, err := d.VMName()
	if err != nil {
		name = ""
	}
	out := map[string]any{
		"builds_dir": first(d.BuildsDir, "/builds"), "cache_dir": first(d.CacheDir, "/cache"),
		"builds_dir_is_shared": false, "hostname": name,
		"driver": map[string]string{"name": "svc", "version": first(d.Version, "dev")},
	}
	return json.NewEncoder(d.Stdout).Encode(out)
}

// Prepare deploys the job's VM and waits until its agent runs commands. A
// VM of the same name left by an earlier attempt of this job is replaced.
func (d *Driver) Prepare(ctx context.Context) error {
	name, err := d.VMName()
	if err != nil {
		return err
	}
	req := api.DeployRequest{Name: name, VMConfig: first(d.job("SVC_VMCONFIG"), d.VMConfig), CustomMetadata: map[string]string{
		"gitlab-job": d.job("CI_JOB_ID"), "gitlab-project": d.job("CI_PROJECT_PATH"), "gitlab-pipeline": d.job("CI_PIPELINE_ID"),
	}}
	if req.VMConfig == "" {
		req.Image = first(d.job("SVC_IMAGE"), d.Image)
	}
	if req.VMConfig == "" && req.Image == "" {
		return errors.New("no VM config or image: give --vmconfig or --image, or the job variable SVC_VMCONFIG or SVC_IMAGE")
	}
	for k, v := range req.CustomMetadata {
		if v == "" {
			delete(req.CustomMetadata, k)
		}
	}
	// The VM dies with the job: its timeout, and 5 minutes for the
	// after_script, the uploads and cleanup.
	if t, err := strconv.Atoi(d.job("CI_JOB_TIMEOUT")); err == nil && t > 0 {
		req.TTL = (time.Duration(t)*time.Second + 5*time.Minute).String()
	}
	if err := d.Client.DeleteVM(ctx, d.Namespace, name); err != nil && api.CodeOf(err) != http.StatusNotFound {
		return fmt.Errorf("remove the VM an earlier attempt of this job left: %w", err)
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

// Run carries one of the job's scripts (gitlab-runner writes it to a file
// and names the stage) into the guest and runs it there, streaming its
// output; the script's failure is a BuildFailure.
func (d *Driver) Run(ctx context.Context, script, stage string) error {
	name, err := d.VMName()
	if err != nil {
		return err
	}
	body, err := os.ReadFile(script)
	if err != nil {
		return fmt.Errorf("read the stage's script: %w", err)
	}
	if len(body) > api.MaxRunStdin {
		return fmt.Errorf("the %s script is %d bytes, at most %d", stage, len(body), api.MaxRunStdin)
	}
	// The script goes to a file first, so that what it runs reads no stdin
	// of ours.
	path := "/var/tmp/svc-ci/" + clean(stage) + ".sh"
	put := api.RunRequest{Command: []string{"sh", "-c", `umask 077 && mkdir -p /var/tmp/svc-ci && cat > "$0"`, path}, Stdin: string(body)}
	if r, err := d.Client.RunVM(ctx, d.Namespace, name, put); err != nil || r.ExitCode != 0 {
		return fmt.Errorf("copy the %s script into VM %s: %v %s", stage, name, err, r.Stderr)
	}
	timeout := api.MaxRunTimeout
	r, err := d.Client.RunVMStream(ctx, d.Namespace, name, api.RunRequest{Command: []string{first(d.job("SVC_SHELL"), d.Shell, "bash"), path}, TimeoutSeconds: &timeout}, d.Stdout, d.Stderr)
	if err != nil {
		return fmt.Errorf("run the %s script in VM %s: %w", stage, name, err)
	}
	if r.ExitCode != 0 {
		return BuildFailure{Code: r.ExitCode}
	}
	return nil
}

// Cleanup deletes the job's VM; one already gone is no error.
func (d *Driver) Cleanup(ctx context.Context) error {
	name, err := d.VMName()
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
