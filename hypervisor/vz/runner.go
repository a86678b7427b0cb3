package vz

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/svc-project/svc/hypervisor"
)

// A VM lives only as long as the process that created it, so each VM has
// a runner: a process of its own (svc vz-runner DIR) that builds the
// machine, answers the peer on a control socket, serves the VM's forwards
// and screen, and exits when the machine stops. Runners are started in a
// session of their own, so they, and the VMs, outlive a peer restart.

// RunnerConfig is what a runner runs: the file runnerFile in the VM's
// directory, written by the driver (mode 0600: it holds the screen's
// password).
type RunnerConfig struct {
	Machine MachineConfig `json:"machine"`
	// Socket is the control socket's path.
	Socket string `json:"socket"`
	// AgentSocket, when set, is where the runner serves the guest agent's
	// port (of a machine that has one, AgentPorter): one connection at a
	// time carries bytes to and from it.
	AgentSocket string `json:"agentSocket,omitempty"`
	// ListenAddr is the node address forwards and the screen listen on.
	ListenAddr string               `json:"listenAddr"`
	Forwards   []hypervisor.Forward `json:"forwards,omitempty"`
	// VNCPort serves the guest's screen (an RFB proxy to the guest's
	// Screen Sharing) when set, asking for VNCPassword.
	VNCPort     int    `json:"vncPort,omitempty"`
	VNCPassword string `json:"vncPassword,omitempty"`
	// GuestVNCPassword is what the guest's screen asks for.
	GuestVNCPassword string `json:"guestVNCPassword,omitempty"`
	// Leases is the host's DHCP leases file, where the guest's address is
	// found by its MAC.
	Leases string `json:"leases"`
}

// Files of a VM's directory.
const (
	runnerFile = "vm.json"
	runnerLog  = "runner.log"
)

// maxRunnerFile bounds the runner's config file.
const maxRunnerFile = 1 << 20

// readRunnerConfig reads and checks a VM directory's runner config.
func readRunnerConfig(dir string) (RunnerConfig, error) {
	var c RunnerConfig
	b, err := readTail(filepath.Join(dir, runnerFile), maxRunnerFile+1)
	if err != nil {
		return c, err
	}
	if len(b) > maxRunnerFile {
		return c, fmt.Errorf("%s: over %d bytes", runnerFile, maxRunnerFile)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", runnerFile, err)
	}
	if c.Socket == "" {
		return c, fmt.Errorf("%s: no control socket", runnerFile)
	}
	return c, c.Machine.Validate()
}

// writeRunnerConfig writes c to dir atomically.
func writeRunnerConfig(dir string, c RunnerConfig) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, runnerFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, runnerFile))
}

// runner is one VM's process.
type runner struct {
	cfg        RunnerConfig
	newMachine NewMachineFunc
	log        *slog.Logger

	// dir is the VM's directory; serving ends the forwards and screen
	// (the runner's life).
	dir     string
	serving context.Context

	mu      sync.Mutex
	machine Machine // nil while it is built
	claimed bool    // a hot guest given to a VM (opClaim): it serves that VM

	// requests are the control requests being answered: the runner
	// answers them all before it exits.
	requests sync.WaitGroup
}

// Run is a runner: it runs the VM in dir until the machine stops (or ctx
// ends, which stops it), answering on the control socket meanwhile.
func Run(ctx context.Context, dir string, newMachine NewMachineFunc, log *slog.Logger) error {
	cfg, err := readRunnerConfig(dir)
	if err != nil {
		return fmt.Errorf("runner %s: %w", dir, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &runner{cfg: cfg, newMachine: newMachine, log: log.With("vm", cfg.Machine.Name), dir: dir, serving: ctx}
	l, err := listenControl(ctx, cfg.Socket)
	if err != nil {
		return err
	}
	defer os.Remove(cfg.Socket)
	served := make(chan struct{})
	go func() { defer close(served); r.serve(l) }()
	defer func() {
		// no new requests; those under way get their answers
		l.Close()
		<-served
		r.requests.Wait()
	}()

	m, err := newMachine(ctx, cfg.Machine)
	if err != nil {
		return err
	}
	if cfg.Machine.RestoreFrom != "" {
		// a state file is used once: the guest's disk moves on from here
		defer os.Remove(cfg.Machine.RestoreFrom)
	}
	if err := m.Start(ctx); err != nil {
		return fmt.Errorf("start %s: %w", cfg.Machine.Name, err)
	}
	r.mu.Lock()
	r.machine = m
	r.mu.Unlock()
	if err := r.keepIdentity(dir, m); err != nil {
		r.log.Warn("record the machine's identity", "err", err)
	}
	r.log.Info("machine started", "os", cfg.Machine.OS, "cpu", cfg.Machine.CPU, "memoryMiB", cfg.Machine.MemoryMiB, "restored", cfg.Machine.RestoreFrom != "")
	if err := r.serveGuest(ctx, cfg); err != nil {
		r.log.Warn("serve the guest", "err", err)
	}
	if ap, ok := m.(AgentPorter); ok && cfg.AgentSocket != "" {
		if err := serveAgent(ctx, cfg.AgentSocket, ap.AgentPort(), r.log); err != nil {
			r.log.Warn("serve the guest agent's port", "err", err)
		}
	}
	select {
	case <-m.Done():
		r.log.Info("machine stopped", "state", m.State())
	case <-ctx.Done():
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		r.stop(sctx, 30*time.Second)
	}
	return nil
}

// keepIdentity records the machine's platform in its config, and that an
// install is done: a restarted runner boots the installed system with the
// same identity.
func (r *runner) keepIdentity(dir string, m Machine) error {
	pk, ok := m.(PlatformKeeper)
	if !ok {
		return nil
	}
	hw, id := pk.Identity()
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cfg
	if c.Machine.InstallIPSW == "" && bytes.Equal(hw, c.Machine.HardwareModel) && bytes.Equal(id, c.Machine.MachineID) {
		return nil
	}
	c.Machine.HardwareModel, c.Machine.MachineID, c.Machine.InstallIPSW = hw, id, ""
	c.Machine.RestoreFrom = ""
	return writeRunnerConfig(dir, c)
}

// claim makes the runner's hot guest the VM of c: it serves the VM's
// forwards and screen from now on, and keeps them in its config, so that
// the machine started again is the VM's (booted: its state file is used
// up). A guest serves one VM: a runner that serves ports already refuses.
func (r *runner) claim(c *claimRequest) error {
	if err := c.check(); err != nil {
		return err
	}
	r.mu.Lock()
	if r.claimed || len(r.cfg.Forwards) > 0 || r.cfg.VNCPort != 0 {
		r.mu.Unlock()
		return errors.New("claim: the guest serves a VM already")
	}
	r.claimed = true
	r.cfg.ListenAddr, r.cfg.Forwards, r.cfg.VNCPort, r.cfg.VNCPassword = c.ListenAddr, c.Forwards, c.VNCPort, c.VNCPassword
	r.cfg.Machine.RestoreFrom = ""
	cfg := r.cfg
	err := writeRunnerConfig(r.dir, cfg)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	r.log.Info("the hot guest is claimed", "forwards", len(cfg.Forwards), "vncPort", cfg.VNCPort)
	return r.serveGuest(r.serving, cfg)
}

// listenControl listens on the control socket; a socket left by a runner
// that died is replaced, one a live runner answers on is refused.
func listenControl(ctx context.Context, sock string) (net.Listener, error) {
	if _, err := ask(ctx, sock, request{Op: opState}); err == nil {
		return nil, fmt.Errorf("runner: another runner answers on %s", sock)
	}
	_ = os.Remove(sock)
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "unix", sock)
	if err != nil {
		return nil, fmt.Errorf("runner: control socket: %w", err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// serveGuest starts cfg's forwards of the node's ports to the guest's and
// its screen, all ended with ctx; it starts all it can and returns what
// could not be.
func (r *runner) serveGuest(ctx context.Context, cfg RunnerConfig) error {
	mac, err := net.ParseMAC(cfg.Machine.MAC)
	if err != nil {
		return err // Validate has refused it already
	}
	guest := func() (netip.Addr, bool) {
		f, err := os.Open(cfg.Leases)
		if err != nil {
			return netip.Addr{}, false
		}
		defer f.Close()
		leases, err := ParseLeases(f)
		if err != nil {
			return netip.Addr{}, false
		}
		return IPForMAC(leases, mac)
	}
	var errs []error
	for _, f := range cfg.Forwards {
		if _, err := Forward(ctx, cfg.ListenAddr, f, guest, r.log); err != nil {
			errs = append(errs, err)
		}
	}
	if cfg.VNCPort != 0 {
		sc := ScreenConfig{
			Listen:   net.JoinHostPort(cfg.ListenAddr, strconv.Itoa(cfg.VNCPort)),
			Password: cfg.VNCPassword, GuestPassword: cfg.GuestVNCPassword, Guest: guest,
		}
		if err := ServeScreen(ctx, sc, r.log); err != nil {
			errs = append(errs, fmt.Errorf("screen port %d: %w", cfg.VNCPort, err))
		}
	}
	return errors.Join(errs...)
}

func (r *runner) current() Machine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.machine
}

// serve answers control requests until l is closed.
func (r *runner) serve(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		r.requests.Add(1)
		go r.handle(conn)
	}
}

// requestTimeout bounds the work of one control request.
const requestTimeout = maxGrace + time.Minute

func (r *runner) handle(conn net.Conn) {
	defer r.requests.Done()
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	_ = conn.SetReadDeadline(time.Now().Add(controlDialWait))
	var req request
	if err := json.NewDecoder(io.LimitReader(conn, maxControlMessage)).Decode(&req); err != nil {
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	err := r.do(ctx, req)
	resp := response{State: MachineStarting, PID: os.Getpid()}
	if m := r.current(); m != nil {
		resp.State = m.State()
	}
	if err != nil {
		resp.Error = err.Error()
	}
	_ = conn.SetWriteDeadline(time.Now().Add(controlDialWait))
	_ = json.NewEncoder(conn).Encode(resp)
}

// do carries out one request.
func (r *runner) do(ctx context.Context, req request) error {
	if req.Op == opState {
		return nil
	}
	m := r.current()
	if m == nil {
		return errors.New("the machine is still starting")
	}
	switch req.Op {
	case opStop:
		grace := time.Duration(req.GraceSeconds) * time.Second
		if grace < 0 || grace > maxGrace {
			return fmt.Errorf("grace %s: give 0 to %s", grace, maxGrace)
		}
		sctx, cancel := context.WithTimeout(ctx, grace+30*time.Second)
		defer cancel()
		return r.stop(sctx, grace)
	case opKill:
		return m.Stop(ctx)
	case opPause, opResume:
		p, ok := m.(MachinePauser)
		if !ok {
			return fmt.Errorf("%s: %w (the machine cannot pause)", req.Op, hypervisor.ErrUnsupported)
		}
		if req.Op == opPause {
			return p.Pause(ctx)
		}
		return p.Resume(ctx)
	case opSave:
		return r.save(ctx, m, req.Path)
	case opClaim:
		if st := m.State(); st != MachineRunning {
			return fmt.Errorf("claim: the machine is %s, not running", st)
		}
		return r.claim(req.Claim)
	default:
		return fmt.Errorf("unknown operation %q", req.Op)
	}
}

// stop asks the guest to shut down and forces the machine off when it
// has not within grace (macOS guests ignore the request: they are forced
// after grace).
func (r *runner) stop(ctx context.Context, grace time.Duration) error {
	m := r.current()
	if m == nil {
		return nil
	}
	if grace > 0 && m.State() == MachineRunning {
		if err := m.RequestStop(ctx); err != nil {
			r.log.Info("the guest cannot be asked to stop; forcing it", "err", err)
		} else {
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-m.Done():
				return nil
			case <-t.C:
				r.log.Info("the guest did not stop within its grace; forcing it", "grace", grace)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	select {
	case <-m.Done():
		return nil
	default:
	}
	return m.Stop(ctx)
}

// save writes the machine's memory to path (in the VM's directory) and
// stops it.
func (r *runner) save(ctx context.Context, m Machine, path string) error {
	r.mu.Lock()
	disk := r.cfg.Machine.Disk
	r.mu.Unlock()
	if filepath.Dir(path) != filepath.Dir(disk) {
		return fmt.Errorf("a state file belongs in the VM's directory, not %s", path)
	}
	p, canPause := m.(MachinePauser)
	ss, canSave := m.(StateSaver)
	if !canPause || !canSave {
		return fmt.Errorf("save: %w (the machine's memory cannot be saved on this host)", hypervisor.ErrUnsupported)
	}
	if m.State() != MachinePaused {
		if err := p.Pause(ctx); err != nil {
			return fmt.Errorf("pause: %w", err)
		}
	}
	if err := ss.SaveState(ctx, path); err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("save: %w", err)
	}
	return m.Stop(ctx)
}
