package gitlab

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
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

func TestVMName_from_the_job(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want string
		err  bool
	}{
		{"job and runner", map[string]string{"CUSTOM_ENV_CI_JOB_ID": "42", "CUSTOM_ENV_CI_RUNNER_SHORT_TOKEN": "GlRt_x-Y9"}, "gl-glrtxy9-42", false},
		{"job only", map[string]string{"CUSTOM_ENV_CI_JOB_ID": "42"}, "gl-42", false},
		{"no job", nil, "", true},
		{"not a job id", map[string]string{"CUSTOM_ENV_CI_JOB_ID": "42; rm -rf /"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := (&Driver{Getenv: env(tc.vars)}).VMName()
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("VMName = %q, %v; want %q (error %v)", got, err, tc.want, tc.err)
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
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.BuildsDir != "/b" || got.CacheDir != "/cache" || got.Shared || got.Hostname != "gl-7" || got.Driver.Name != "svc" || got.Driver.Version != "1.2.3" {
		t.Fatalf("config: %+v", got)
	}
}
