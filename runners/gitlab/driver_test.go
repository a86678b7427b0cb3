package gitlab

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestExitCode_build_and_system_failures(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "code")
	runner := env(map[string]string{"BUILD_FAILURE_EXIT_CODE": "17", "SYSTEM_FAILURE_EXIT_CODE": "23", "BUILD_EXIT_CODE_FILE": file})
	cases := []struct {
		name     string
		err      error
		getenv   func(string) string
		want     int
		wantFile string
	}{
		{"done", nil, runner, 0, ""},
		{"the script failed", BuildFailure{Code: 3}, runner, 17, "3"},
		{"wrapped", errors.Join(errors.New("stage"), BuildFailure{Code: 9}), runner, 17, "9"},
		{"the executor failed", errors.New("no VM"), runner, 23, ""},
		{"no codes from the runner", BuildFailure{Code: 3}, env(nil), 1, ""},
		{"no codes, a system failure", errors.New("x"), env(nil), 2, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(file)
			if got := ExitCode(tc.err, tc.getenv); got != tc.want {
				t.Fatalf("ExitCode = %d, want %d", got, tc.want)
			}
			b, _ := os.ReadFile(file)
			if string(b) != tc.wantFile {
				t.Fatalf("BUILD_EXIT_CODE_FILE holds %q, want %q", b, tc.wantFile)
			}
		})
	}
}

func TestNewJob_names_and_keys(t *testing.T) {
	resp := filepath.Join(t.TempDir(), "job.json")
	if err := os.WriteFile(resp, []byte(`{"id": 9001, "token": "x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		vars   map[string]string
		prefix string
		err    bool
	}{
		{"job and runner", map[string]string{"CUSTOM_ENV_CI_JOB_ID": "42", "CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN": "GlRt_x-Y9"}, "gl-glrtxy9-42-", false},
		{"job only", map[string]string{"CUSTOM_ENV_CI_JOB_ID": "42"}, "gl-42-", false},
		{"the runner's job response wins over the job's variable", map[string]string{"CUSTOM_ENV_CI_JOB_ID": "42", "JOB_RESPONSE_FILE": resp}, "gl-9001-", false},
		{"no job", nil, "", true},
		{"not a job id", map[string]string{"CUSTOM_ENV_CI_JOB_ID": "42; rm -rf /"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &Driver{Getenv: env(tc.vars)}
			vm, key, err := d.NewJob()
			if (err != nil) != tc.err || !strings.HasPrefix(vm, tc.prefix) {
				t.Fatalf("NewJob = %q, %v; want %q... (error %v)", vm, err, tc.prefix, tc.err)
			}
			if tc.err {
				return
			}
			vm2, key2, _ := d.NewJob()
			if vm2 == vm || key2 == key || len(key) < 32 || len(vm) > 63 {
				t.Fatalf("two jobs of one id: %q %q and %q %q", vm, key, vm2, key2)
			}
		})
	}
}

// The stages after config take the VM from config's job_env, never from a
// job's variable.
func TestVMName_from_job_env_only(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"from job_env", map[string]string{EnvVM: "gl-42-ab12cd34", EnvKey: "k"}, "gl-42-ab12cd34"},
		{"a job's variable is not job_env", map[string]string{"CUSTOM_ENV_" + EnvVM: "gl-other", "CUSTOM_ENV_" + EnvKey: "k", "CUSTOM_ENV_CI_JOB_ID": "42"}, ""},
		{"no key", map[string]string{EnvVM: "gl-42-ab12cd34"}, ""},
		{"not a name", map[string]string{EnvVM: "../x", EnvKey: "k"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&Driver{Getenv: env(tc.vars)}).VMName()
			if got != tc.want || (err != nil) != (tc.want == "") {
				t.Fatalf("VMName = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestConfig_describes_the_executor(t *testing.T) {
	var out bytes.Buffer
	d := &Driver{Getenv: env(map[string]string{"CUSTOM_ENV_CI_JOB_ID": "7"}), Stdout: &out, Version: "1.2.3", BuildsDir: "/b"}
	if err := d.Config(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		BuildsDir string `json:"builds_dir"`
		CacheDir  string `json:"cache_dir"`
		Shared    bool   `json:"builds_dir_is_shared"`
		Hostname  string `json:"hostname"`
		Driver    struct{ Name, Version string }
		JobEnv    map[string]string `json:"job_env"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.BuildsDir != "/b" || got.CacheDir != "/cache" || got.Shared || !strings.HasPrefix(got.Hostname, "gl-7-") || got.Driver.Name != "svc" || got.Driver.Version != "1.2.3" ||
		got.JobEnv[EnvVM] != got.Hostname || len(got.JobEnv[EnvKey]) < 32 {
		t.Fatalf("config: %+v", got)
	}
}
