package vz

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The runner processes of these tests are the test binary itself, run
// with runnerEnv set: TestMain then runs a runner on a fakeMachine.
const runnerEnv = "SVC_VZ_TEST_RUNNER"

func TestMain(m *testing.M) {
	if os.Getenv(runnerEnv) == "1" {
		log := slog.New(slog.NewTextHandler(os.Stderr, nil))
		if err := Run(context.Background(), os.Args[len(os.Args)-1], newFakeMachine, log); err != nil {
			log.Error("runner", "err", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// agentEnv names, for a runner of these tests, the unix socket of a guest
// agent (QEMU's qemu-ga on the host, testkit/qgatest) the fake machine's
// agent port is connected to; unset, the port has no agent behind it.
const agentEnv = "SVC_VZ_TEST_AGENT"

// fakeMachine is a machine without a guest: it boots at once, obeys a
// stop request when it is a Linux guest (a macOS guest ignores it, as
// macOS does), and saves a state file naming it. Its agent port leads to
// the agent agentEnv names, or to no one.
type fakeMachine struct {
	cfg   MachineConfig
	done  chan struct{}
	agent net.Conn

	mu    sync.Mutex
	state MachineState
}

func newFakeMachine(_ context.Context, cfg MachineConfig) (Machine, error) {
	if strings.Contains(cfg.Name, "unbootable") {
		return nil, errors.New("the framework refuses the configuration: no boot disk")
	}
	if _, err := os.Stat(cfg.NVRAM); err != nil { // the framework creates it
		if err := os.WriteFile(cfg.NVRAM, []byte("auxiliary storage"), 0o600); err != nil {
			return nil, err
		}
	}
	if cfg.InstallIPSW != "" {
		// the install writes macOS onto the disk and takes the restore
		// image's hardware model
		if err := os.WriteFile(cfg.Disk, []byte("macOS installed from "+cfg.InstallIPSW), 0o600); err != nil {
			return nil, err
		}
		cfg.HardwareModel = []byte("hardware model of " + cfg.InstallIPSW)
	}
	f := &fakeMachine{cfg: cfg, done: make(chan struct{}), state: MachineStopped}
	if sock := os.Getenv(agentEnv); sock != "" {
		c, err := net.Dial("unix", sock)
		if err != nil {
			return nil, fmt.Errorf("the test's guest agent: %w", err)
		}
		f.agent = c
	} else {
		port, nobody := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, nobody) }() // a port no agent reads or answers
		f.agent = port
	}
	go func() { <-f.done; f.agent.Close() }()
	return f, nil
}

func (f *fakeMachine) AgentPort() io.ReadWriter { return f.agent }

func (f *fakeMachine) set(s MachineState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == MachineStopped && s == MachineStopped {
		return
	}
	f.state = s
	if s == MachineStopped {
		close(f.done)
	}
}

func (f *fakeMachine) console(line string) error {
	c, err := os.OpenFile(f.cfg.ConsoleLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = fmt.Fprintln(c, line)
	return err
}

func (f *fakeMachine) Start(context.Context) error {
	if f.cfg.RestoreFrom != "" {
		b, err := os.ReadFile(f.cfg.RestoreFrom)
		if err != nil {
			return err
		}
		// The framework restores a state only into the configuration it
		// was saved from: the fake compares what identifies it.
		if string(b) != f.savedAs() {
			return fmt.Errorf("state file of another configuration: %q, this one is %q", b, f.savedAs())
		}
		f.set(MachineRunning)
		return f.console("restored " + f.cfg.Name)
	}
	f.set(MachineRunning)
	return f.console("booted " + f.cfg.Name + " mac " + f.cfg.MAC)
}

func (f *fakeMachine) RequestStop(context.Context) error {
	if f.cfg.OS == GuestLinux {
		go func() {
			time.Sleep(20 * time.Millisecond) // the guest shuts down
			f.set(MachineStopped)
		}()
	}
	return nil
}

func (f *fakeMachine) Stop(context.Context) error { f.set(MachineStopped); return nil }

func (f *fakeMachine) Pause(context.Context) error {
	if f.State() != MachineRunning {
		return errors.New("not running")
	}
	f.set(MachinePaused)
	return nil
}

func (f *fakeMachine) Resume(context.Context) error {
	if f.State() != MachinePaused {
		return errors.New("not paused")
	}
	f.set(MachineRunning)
	return nil
}

func (f *fakeMachine) SaveState(_ context.Context, path string) error {
	if f.State() != MachinePaused {
		return errors.New("save needs a paused machine")
	}
	return os.WriteFile(path, []byte(f.savedAs()), 0o600)
}

func (f *fakeMachine) State() MachineState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

func (f *fakeMachine) Done() <-chan struct{} { return f.done }

func (f *fakeMachine) Identity() (hardwareModel, machineID []byte) {
	if len(f.cfg.MachineID) > 0 {
		return f.cfg.HardwareModel, f.cfg.MachineID // the one the config gave
	}
	return f.cfg.HardwareModel, []byte("machine " + f.cfg.Name)
}

// savedAs is what the fake's state file records of the machine it saved.
func (f *fakeMachine) savedAs() string {
	_, id := f.Identity()
	return fmt.Sprintf("saved cpu=%d memory=%d os=%s machineID=%x", f.cfg.CPU, f.cfg.MemoryMiB, f.cfg.OS, id)
}
