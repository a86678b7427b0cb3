package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svc-project/svc/testkit/guest"
	"github.com/svc-project/svc/testkit/poll"
	"github.com/svc-project/svc/testkit/syncbuf"
)

// runner drives the custom executor's stages as gitlab-runner does: each a
// program started in a directory of its own, in a process group of its
// own, the job's variables as CUSTOM_ENV_*, config's job_env passed to
// the stages after it, the exit codes the runner chose in
// BUILD_FAILURE_EXIT_CODE and SYSTEM_FAILURE_EXIT_CODE, and
// BUILD_EXIT_CODE_FILE for the script's own status.
type runner struct {
	t        *testing.T
	bin, api string
	token    string
	jobID    string
	dir      string
	jobEnv   map[string]string
}

const (
	buildFailure  = 17 // what this "runner" set; gitlab-runner sets its own
	systemFailure = 23
)

func (r *runner) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, r.bin, append([]string{"gitlab-executor"}, args...)...)
	c.Dir = r.dir
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Env = append(os.Environ(), "SVC_API_URL="+r.api, "SVC_TOKEN="+r.token, "SVC_CONFIG="+filepath.Join(r.dir, "none.json"),
		"CUSTOM_ENV_CI_JOB_ID="+r.jobID, "CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN=GlRt-Ab12", "CUSTOM_ENV_CI_JOB_TIMEOUT=3600",
		"CUSTOM_ENV_CI_PROJECT_PATH=group/project", "CUSTOM_ENV_CI_PIPELINE_ID=7",
		"BUILD_FAILURE_EXIT_CODE="+strconv.Itoa(buildFailure), "SYSTEM_FAILURE_EXIT_CODE="+strconv.Itoa(systemFailure),
		"BUILD_EXIT_CODE_FILE="+filepath.Join(r.dir, "exit-code"))
	for k, v := range r.jobEnv {
		c.Env = append(c.Env, k+"="+v)
	}
	return c
}

// config runs the config stage and keeps its job_env for the stages
// after it; it returns the job's VM.
func (r *runner) config() string {
	r.t.Helper()
	out, errOut, code := r.stage("config")
	var cfg struct {
		BuildsDir string            `json:"builds_dir"`
		Hostname  string            `json:"hostname"`
		JobEnv    map[string]string `json:"job_env"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &cfg) != nil || cfg.BuildsDir != "/builds" || cfg.JobEnv["SVC_GITLAB_VM"] != cfg.Hostname ||
		!strings.HasPrefix(cfg.Hostname, "gl-glrtab12-"+r.jobID+"-") {
		r.t.Fatalf("config: exit %d: %s %s", code, out, errOut)
	}
	r.jobEnv = cfg.JobEnv
	return cfg.Hostname
}

// stage runs a stage to its end: stdout, stderr, exit status.
func (r *runner) stage(args ...string) (string, string, int) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := r.cmd(ctx, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// script writes a stage's script as gitlab-runner does, to a file.
func (r *runner) script(name, body string) string {
	p := filepath.Join(r.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// startLong starts a run stage of a script that prints "started" and
// returns once it has, with the running stage.
func (r *runner) startLong(ctx context.Context, body string) (*exec.Cmd, *syncbuf.Buffer, *syncbuf.Buffer) {
	r.t.Helper()
	long := r.cmd(ctx, "run", r.script("long", body), "step_script")
	var lout, lerr syncbuf.Buffer
	long.Stdout, long.Stderr = &lout, &lerr
	if err := long.Start(); err != nil {
		r.t.Fatal(err)
	}
	if err := poll.Until(ctx, time.Minute, func() error {
		if !strings.Contains(lout.String(), "started") {
			return os.ErrNotExist
		}
		return nil
	}); err != nil {
		r.t.Fatalf("the long script did not start: %q %q", lout.String(), lerr.String())
	}
	return long, &lout, &lerr
}

// The custom executor's stages against real VMs, as gitlab-runner drives
// them: config (the VM's name and the job's key in job_env), prepare (the
// VM runs), a passing script under the default shell (mini-linux has no
// bash), a failing one (BUILD_FAILURE_EXIT_CODE, the script's status in
// BUILD_EXIT_CODE_FILE); a second job of the same CI_JOB_ID gets a VM of
// its own, and neither job's stages touch the other's VM; a job cancelled
// mid-script (SIGTERM to run's process group) has every process of its
// script stopped in the guest (what the script would do after its sleep
// never happens); cleanup (the VM gone); a run killed outright (the runner
// crashed) and the cleanup after it; a stage without its VM is a system
// failure.
func TestBinary_gitlab_executor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	image := guest.RequireLibvirt(t)
	bin := buildBinary(t)
	dir := guest.TempDir(t)
	const ip = "127.0.252.2" // this test's own address and peer name on the shared libvirtd
	ports := freePortsOn(t, ip, 4)
	a := runAgent(t, bin, dir, "e2e-gitlab", nil, "--dev", "--bind", ip, "--data-dir", filepath.Join(dir, "data"),
		"--api-port", strconv.Itoa(ports[0]), "--raft-port", strconv.Itoa(ports[1]), "--gossip-port", strconv.Itoa(ports[2]), "--tls-port", strconv.Itoa(ports[3]))
	a.api = "http://" + ip + ":" + strconv.Itoa(ports[0])
	var admin []byte
	if err := poll.Until(context.Background(), 60*time.Second, func() (err error) {
		admin, err = os.ReadFile(filepath.Join(dir, "data", "admin.token"))
		return err
	}); err != nil {
		t.Fatalf("no admin token: %v", err)
	}
	t.Setenv("SVC_TOKEN", strings.TrimSpace(string(admin)))
	if err := poll.Until(context.Background(), 60*time.Second, func() error {
		_, err := cli(t, bin, a.api, "image", "upload", image, "--name", "mini-linux", "-q")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli(t, bin, a.api, "vmconfig", "create", "ci", "--image", "mini-linux", "--cpu", "1", "--memory", "0.25"); err != nil {
		t.Fatal(err)
	}
	// The runner holds a service account's token of the namespace.
	if _, err := cli(t, bin, a.api, "sa", "create", "gitlab"); err != nil {
		t.Fatal(err)
	}
	sa, err := cli(t, bin, a.api, "sa", "token", "gitlab")
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{t: t, bin: bin, api: a.api, token: strings.TrimSpace(sa), jobID: "101", dir: t.TempDir()}
	vm := r.config()
	if out, errOut, code := r.stage("prepare", "--vmconfig", "ci"); code != 0 || !strings.Contains(out, "VM "+vm+" runs") {
		t.Fatalf("prepare: exit %d: %s %s", code, out, errOut)
	}
	if out, err := cli(t, bin, a.api, "vm", "get", vm, "-o", "json"); err != nil || !strings.Contains(out, `"Running"`) || !strings.Contains(out, `"gitlab-job": "101"`) {
		t.Fatalf("the job's VM: %v %s", err, out)
	}
	// The default shell: mini-linux has no bash, and the script runs.
	pass := r.script("step_script", "#!/bin/sh\nset -e\necho \"hello from $(uname -n)\"\necho to-stderr >&2\nmkdir -p /builds/group/project && cd /builds/group/project && echo built > out.txt && cat out.txt\n")
	if out, errOut, code := r.stage("run", pass, "step_script"); code != 0 || !strings.Contains(out, "hello from "+vm) || !strings.Contains(out, "built") || !strings.Contains(errOut, "to-stderr") {
		t.Fatalf("a passing script: exit %d: stdout %q stderr %q", code, out, errOut)
	}
	// The builds stay between stages: the next script sees the first's files.
	fail := r.script("after_script", "#!/bin/sh\ncat /builds/group/project/out.txt\necho failing >&2\nexit 3\n")
	out, errOut, code := r.stage("run", "--shell", "sh", fail, "after_script")
	if code != buildFailure || !strings.Contains(out, "built") || !strings.Contains(errOut, "failing") {
		t.Fatalf("a failing script: exit %d (want %d): stdout %q stderr %q", code, buildFailure, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "exit-code")); err != nil || string(b) != "3" {
		t.Fatalf("BUILD_EXIT_CODE_FILE: %q %v", b, err)
	}

	// A second job that sets CI_JOB_ID to the first's: a VM of its own;
	// its prepare and cleanup leave the first job's VM alone, and a stage
	// given the first job's VM with another key touches nothing.
	other := &runner{t: t, bin: bin, api: a.api, token: r.token, jobID: "101", dir: t.TempDir()}
	vm2 := other.config()
	if vm2 == vm {
		t.Fatalf("two jobs of CI_JOB_ID 101 share VM %s", vm)
	}
	if out, errOut, code := other.stage("prepare", "--vmconfig", "ci"); code != 0 {
		t.Fatalf("prepare of the second job: exit %d: %s %s", code, out, errOut)
	}
	forged := &runner{t: t, bin: bin, api: a.api, token: r.token, jobID: "101", dir: t.TempDir(),
		jobEnv: map[string]string{"SVC_GITLAB_VM": vm, "SVC_GITLAB_KEY": other.jobEnv["SVC_GITLAB_KEY"]}}
	for _, st := range [][]string{{"prepare", "--vmconfig", "ci"}, {"run", pass, "step_script"}, {"cleanup"}} {
		if _, errOut, code := forged.stage(st...); code != systemFailure || !strings.Contains(errOut, "not made by this job") {
			t.Fatalf("%s with another job's VM: exit %d: %s", st[0], code, errOut)
		}
	}
	if _, errOut, code := other.stage("cleanup"); code != 0 {
		t.Fatalf("cleanup of the second job: exit %d: %s", code, errOut)
	}
	if out, err := cli(t, bin, a.api, "vm", "get", vm, "-o", "json"); err != nil || !strings.Contains(out, `"Running"`) {
		t.Fatalf("the first job's VM after the second job: %v %s", err, out)
	}

	// The job is cancelled mid-script: gitlab-runner sends SIGTERM to the
	// run stage's process group. The script's processes (its shell, a
	// command in the foreground, one in the background) all end in the
	// guest; the files they would write after their sleeps never appear.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	long, _, lerr := r.startLong(ctx, "#!/bin/sh\n(sleep 20; touch /tmp/after-child) &\necho started\nsleep 20\ntouch /tmp/after\n")
	stoppedAt := time.Now()
	if err := syscall.Kill(-long.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = long.Wait()
	took := time.Since(stoppedAt)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != systemFailure || took > 40*time.Second {
		t.Fatalf("run after SIGTERM: %v after %s (want exit %d within the grace): %s", err, took, systemFailure, lerr.String())
	}
	procs, err := cli(t, bin, a.api, "vm", "run", vm, "--", "sh", "-c", "ps -o args | grep '[s]leep 20'; ls /tmp/after /tmp/after-child 2>&1; true")
	if err != nil || strings.Contains(procs, "sleep 20") || !strings.Contains(procs, "/tmp/after: No such file") || !strings.Contains(procs, "/tmp/after-child: No such file") {
		t.Fatalf("the guest after the stop: %v %q", err, procs)
	}
	t.Logf("a cancelled job's script stopped in %s", took.Round(time.Millisecond))

	if out, errOut, code := r.stage("cleanup"); code != 0 {
		t.Fatalf("cleanup: exit %d: %s %s", code, out, errOut)
	}
	if _, err := cli(t, bin, a.api, "vm", "get", vm); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("the VM after cleanup: %v", err)
	}
	// A stage without its VM is the runner's failure, not the job's.
	if _, errOut, code := r.stage("run", "--shell", "sh", pass, "step_script"); code != systemFailure {
		t.Fatalf("run without a VM: exit %d (want %d): %s", code, systemFailure, errOut)
	}

	// The runner crashes in the middle of a job's script: the run stage is
	// killed; the cleanup that follows removes the VM.
	crash := &runner{t: t, bin: bin, api: a.api, token: r.token, jobID: "102", dir: t.TempDir()}
	vm3 := crash.config()
	if out, errOut, code := crash.stage("prepare", "--vmconfig", "ci"); code != 0 {
		t.Fatalf("prepare 102: exit %d: %s %s", code, out, errOut)
	}
	// gitlab-runner tries a failed prepare again: the VM the first try
	// left, this job's, is replaced.
	if out, errOut, code := crash.stage("prepare", "--vmconfig", "ci"); code != 0 || !strings.Contains(out, "replacing VM "+vm3) {
		t.Fatalf("prepare 102 again: exit %d: %s %s", code, out, errOut)
	}
	long, _, _ = crash.startLong(ctx, "#!/bin/sh\necho started\nsleep 600\n")
	_ = long.Process.Signal(syscall.SIGKILL)
	_ = long.Wait()
	if out, errOut, code := crash.stage("cleanup"); code != 0 {
		t.Fatalf("cleanup after the crash: exit %d: %s %s", code, out, errOut)
	}
	if _, err := cli(t, bin, a.api, "vm", "get", vm3); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("the VM after the crash's cleanup: %v", err)
	}
	waitDomainsGone(t, bin, a.api, "e2e-gitlab")
}
