package vz

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/svc-project/svc/hypervisor"
)

// lifecycleOnly is a machine with no role beyond the lifecycle (as an
// Intel Mac's machine has no StateSaver).
type lifecycleOnly struct{ Machine }

func TestRunner_machine_roles(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name      string
		strip     bool
		op        string
		unsupport bool
	}{
		{"pause with the role", false, opPause, false},
		{"resume with the role", false, opResume, false},
		{"save with the role", false, opSave, false},
		{"pause without it", true, opPause, true},
		{"resume without it", true, opResume, true},
		{"save without it", true, opSave, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := MachineConfig{Name: "roles", Disk: filepath.Join(dir, "disk.img"), NVRAM: filepath.Join(dir, "nvram"), ConsoleLog: filepath.Join(dir, "console.log")}
			fm, err := newFakeMachine(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := fm.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if c.op == opResume {
				if err := fm.(MachinePauser).Pause(ctx); err != nil {
					t.Fatal(err)
				}
			}
			before := fm.State()
			var m Machine = fm
			if c.strip {
				m = lifecycleOnly{fm}
			}
			r := &runner{cfg: RunnerConfig{Machine: cfg}, machine: m}
			err = r.do(ctx, request{Op: c.op, Path: filepath.Join(dir, "memory.state")})
			if got := errors.Is(err, hypervisor.ErrUnsupported); got != c.unsupport {
				t.Fatalf("%s: err = %v, want unsupported %v", c.op, err, c.unsupport)
			}
			if !c.unsupport && err != nil {
				t.Fatalf("%s: %v", c.op, err)
			}
			if c.strip && fm.State() != before {
				t.Fatalf("a refused %s took the machine from %s to %s", c.op, before, fm.State())
			}
		})
	}
}

// keepIdentity writes nothing for a machine without a platform of its own.
func TestRunner_keepIdentity_without_platform(t *testing.T) {
	dir := t.TempDir()
	fm, err := newFakeMachine(context.Background(), MachineConfig{NVRAM: filepath.Join(dir, "nvram")})
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{cfg: RunnerConfig{Machine: MachineConfig{InstallIPSW: "x.ipsw"}}}
	if err := r.keepIdentity(dir, lifecycleOnly{fm}); err != nil {
		t.Fatal(err)
	}
	if _, err := readRunnerConfig(dir); err == nil {
		t.Fatal("a config was written for a machine without a platform identity")
	}
}
