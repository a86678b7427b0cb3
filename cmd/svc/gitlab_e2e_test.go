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
// program started in a directory of its own, the job's variables as
// CUSTOM_ENV_*, the exit codes the runner chose in BUILD_FAILURE_EXIT_CODE
// and SYSTEM_FAILURE_EXIT_CODE, and BUILD_EXIT_CODE_FILE for the script's
// own status.
type runner struct {
	t        *testing.T
	bin, api string
	token    string
	jobID    string
	dir      string
}

const (
	buildFailure  = 17 // what this "runner" set; gitlab-runner sets its own
	systemFailure = 23
)

func (r runner) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, r.bin, append([]string{"gitlab-executor"}, args...)...)
	c.Dir = r.dir
	c.Env = append(os.Environ(), "SVC_API_URL="+r.api, "SVC_TOKEN="+r.token, "SVC_CONFIG="+filepath.Join(r.dir, "none.json"),
		"CUSTOM_ENV_CI_JOB_ID="+r.jobID, "CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN=GlRt-Ab12", "CUSTOM_ENV_CI_JOB_TIMEOUT=3600",
		"CUSTOM_ENV_CI_PROJECT_PATH=group/project", "CUSTOM_ENV_CI_PIPELINE_ID=7",
		"BUILD_FAILURE_EXIT_CODE="+strconv.Itoa(buildFailure), "SYSTEM_FAILURE_EXIT_CODE="+strconv.Itoa(systemFailure),
		"BUILD_EXIT_CODE_FILE="+filepath.Join(r.dir, "exit-code"))
	return c
}

// stage runs a stage to its end: stdout, stderr, exit status.
func (r runner) stage(args ...string) (string, string, int) {
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
func (r runner) script(name, body string) string {
	p := filepath.Join(r.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// The custom executor's stages against real VMs: config, prepare (the VM
// runs, named after the job), a passing script (its output streamed, the
// guest's hostname the VM's), a failing one (BUILD_FAILURE_EXIT_CODE, the
// script's status in BUILD_EXIT_CODE_FILE), cleanup (the VM gone); then a
// run stage killed mid-script, as when the runner crashes, and the cleanup
// after it; a stage without its VM is a system failure.
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
	r := runner{t: t, bin: bin, api: a.api, token: strings.TrimSpace(sa), jobID: "101", dir: t.TempDir()}
	const vm = "gl-glrtab12-101"

	out, errOut, code := r.stage("config")
	var cfg map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &cfg) != nil || cfg["builds_dir"] != "/builds" || cfg["hostname"] != vm {
		t.Fatalf("config: exit %d: %s %s", code, out, errOut)
	}
	if out, errOut, code := r.stage("prepare", "--vmconfig", "ci"); code != 0 || !strings.Contains(out, "VM "+vm+" runs") {
		t.Fatalf("prepare: exit %d: %s %s", code, out, errOut)
	}
	if out, err := cli(t, bin, a.api, "vm", "get", vm, "-o", "json"); err != nil || !strings.Contains(out, `"Running"`) || !strings.Contains(out, `"gitlab-job": "101"`) {
		t.Fatalf("the job's VM: %v %s", err, out)
	}
	pass := r.script("step_script", "#!/bin/sh\nset -e\necho \"hello from $(uname -n)\"\necho to-stderr >&2\nmkdir -p /builds/group/project && cd /builds/group/project && echo built > out.txt && cat out.txt\n")
	if out, errOut, code := r.stage("run", "--shell", "sh", pass, "step_script"); code != 0 || !strings.Contains(out, "hello from "+vm) || !strings.Contains(out, "built") || !strings.Contains(errOut, "to-stderr") {
		t.Fatalf("a passing script: exit %d: stdout %q stderr %q", code, out, errOut)
	}
	// The builds stay between stages: the next script sees the first's files.
	fail := r.script("after_script", "#!/bin/sh\ncat /builds/group/project/out.txt\necho failing >&2\nexit 3\n")
	out, errOut, code = r.stage("run", "--shell", "sh", fail, "after_script")
	if code != buildFailure || !strings.Contains(out, "built") || !strings.Contains(errOut, "failing") {
		t.Fatalf("a failing script: exit %d (want %d): stdout %q stderr %q", code, buildFailure, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "exit-code")); err != nil || string(b) != "3" {
		t.Fatalf("BUILD_EXIT_CODE_FILE: %q %v", b, err)
	}
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
	// killed; the cleanup that follows (gitlab-runner's, or the next
	// attempt's prepare) removes the VM.
	r.jobID = "102"
	if out, errOut, code := r.stage("prepare", "--vmconfig", "ci"); code != 0 {
		t.Fatalf("prepare 102: exit %d: %s %s", code, out, errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	long := r.cmd(ctx, "run", "--shell", "sh", r.script("long", "#!/bin/sh\necho started\nsleep 600\n"), "step_script")
	var lout syncbuf.Buffer
	long.Stdout = &lout
	if err := long.Start(); err != nil {
		t.Fatal(err)
	}
	if err := poll.Until(ctx, time.Minute, func() error {
		if !strings.Contains(lout.String(), "started") {
			return os.ErrNotExist
		}
		return nil
	}); err != nil {
		t.Fatalf("the long script did not start: %q", lout.String())
	}
	_ = long.Process.Signal(syscall.SIGKILL)
	_ = long.Wait()
	if out, errOut, code := r.stage("cleanup"); code != 0 {
		t.Fatalf("cleanup after the crash: exit %d: %s %s", code, out, errOut)
	}
	if _, err := cli(t, bin, a.api, "vm", "get", "gl-glrtab12-102"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("the VM after the crash's cleanup: %v", err)
	}
	waitDomainsGone(t, bin, a.api, "e2e-gitlab")
}
