package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
	"github.com/svc-project/svc/raftfsm"
)

// guestAPI serves work inside a VM's guest: run, resize, console, port forwarding.
type guestAPI struct {
	*core
	guests Guests
	ready  Readiness
}

func (s *guestAPI) routes(srv *Server) {
	const ns = "/api/v1/namespaces/:namespace"
	get, post := http.MethodGet, http.MethodPost
	srv.handle(Route{Method: get, Path: ns + "/vms/:vm/console", Rule: RuleMember, PoolVM: true, Stream: true}, s.console)
	srv.handle(Route{Method: post, Path: ns + "/vms/:vm/run", Rule: RuleMember, PoolVM: true, Target: VMHost}, s.runVM)
	srv.handle(Route{Method: get, Path: ns + "/vms/:vm/run", Rule: RuleMember, PoolVM: true, Stream: true, Target: VMHost}, s.runVMStream)
	srv.handle(Route{Method: get, Path: ns + "/vms/:vm/port-forward", Rule: RuleMember, PoolVM: true, Stream: true, Target: VMHost}, s.portForward)
	srv.handle(Route{Method: post, Path: ns + "/vms/:vm/resize", Rule: RuleMember, PoolVM: true, Target: VMHost}, s.resizeVM)
}

// Running a program in a VM's guest: the VM's host peer (the route's
// target) runs it through the guest's agent. POST answers when it ends,
// with its outputs bounded; the same path as a websocket streams them.
// Neither the command, its input nor its output is logged.

// maxRunBody bounds a run's JSON body (its stdin is at most
// api.MaxRunStdin once decoded).
const maxRunBody = 8 << 20

// runRequestWait bounds how long a websocket run waits for its request.
const runRequestWait = 10 * time.Second

// checkRun validates a run request and returns its timeout.
func checkRun(req api.RunRequest) (time.Duration, error) {
	if len(req.Command) == 0 || req.Command[0] == "" {
		return 0, badRequest(`field "command": the program to run and its arguments are required, e.g. ["uname", "-a"]`)
	}
	if len(req.Command) > api.MaxRunArgs {
		return 0, badRequest(`field "command": %d arguments, more than %d`, len(req.Command), api.MaxRunArgs)
	}
	total := 0
	for i, a := range req.Command {
		if strings.ContainsRune(a, 0) {
			return 0, badRequest(`field "command": argument %d holds a NUL byte`, i)
		}
		total += len(a)
	}
	if total > api.MaxRunArgBytes {
		return 0, badRequest(`field "command": %d bytes of arguments, more than %d`, total, api.MaxRunArgBytes)
	}
	if len(req.Stdin) > api.MaxRunStdin {
		return 0, errorf(http.StatusRequestEntityTooLarge, api.ReasonRequestEntityTooLarge, `field "stdin": %d bytes, more than %d`, len(req.Stdin), api.MaxRunStdin)
	}
	if req.TimeoutSeconds == nil {
		return api.DefaultRunTimeout * time.Second, nil
	}
	if t := *req.TimeoutSeconds; t < 1 || t > api.MaxRunTimeout {
		return 0, badRequest(`field "timeoutSeconds": %d is out of range (1 to %d; leave it out for %d)`, t, api.MaxRunTimeout, api.DefaultRunTimeout)
	}
	return time.Duration(*req.TimeoutSeconds) * time.Second, nil
}

// runnable returns the path's VM if it runs here and has a host to ask.
// A VM not seen running yet is looked at again once this replica has
// caught up with the leader (a caller's deploy may have answered through
// another peer a moment ago).
func (s *guestAPI) runnable(ctx context.Context, p httprouter.Params, what string) (raftfsm.VM, error) {
	vm, err := s.vmOf(p)
	if err != nil || vm.Status == raftfsm.VMRunning {
		return vm, err
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.LeaderWait)
	err = s.ready.SyncReplica(sctx)
	cancel()
	if err == nil {
		if vm, err = s.vmOf(p); err != nil {
			return vm, err
		}
	}
	if vm.Status != raftfsm.VMRunning {
		return vm, errorf(http.StatusConflict, api.ReasonConflict, "vm %q is %s: %s only while it runs", vm.Name, vm.Status, what)
	}
	if s.guests == nil || vm.Node != s.replica.Name() {
		return vm, unavailable("2", "vm %q is on %s, which this peer cannot reach for this; retry", vm.Name, vm.Node)
	}
	return vm, nil
}

// agentRetryEvery is how often a run asks again for the agent of a guest
// that is still booting.
const agentRetryEvery = 500 * time.Millisecond

// errStillBooting is a run that ended waiting for the agent of a guest
// still booting.
var errStillBooting = errors.New("the guest is still booting")

// execWhenUp runs c in vm's guest. While the guest is still booting (its
// agent has not answered since the VM started, within the host's wait for
// it: its identity step is pending), a run its agent does not take yet
// waits for it, within ctx, instead of being told the image has no agent.
func (s *guestAPI) execWhenUp(ctx context.Context, vm raftfsm.VM, c hypervisor.ExecCommand) (hypervisor.ExecResult, error) {
	for {
		res, err := s.guests.Exec(ctx, vm, c)
		if !errors.Is(err, hypervisor.ErrNoAgent) || !errors.Is(err, hypervisor.ErrNotStarted) || !s.booting(vm) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("%w: %w", errStillBooting, err)
		case <-time.After(agentRetryEvery):
		}
	}
}

// booting reports whether vm runs and its agent is still awaited: its host
// has not heard it since the VM started, and its wait for it has not
// passed (the identity step is pending, or not reported yet).
func (s *guestAPI) booting(vm raftfsm.VM) bool {
	cur, ok := s.replica.FSM().VM(vm.Namespace, vm.Name)
	if !ok || cur.Status != raftfsm.VMRunning || cur.UID != vm.UID {
		return false
	}
	return cur.Identity == nil || cur.Identity.State == raftfsm.IdentityPending
}

// runError maps what Exec returned to a Status.
func runError(vm raftfsm.VM, timeout time.Duration, err error) error {
	switch {
	case errors.Is(err, errStillBooting):
		return errorf(http.StatusGatewayTimeout, api.ReasonTimeout, "vm %q is still booting: its guest agent did not answer within the run's timeout of %s; try again, or give the run a longer timeout", vm.Name, timeout)
	case errors.Is(err, hypervisor.ErrExecTimeout):
		return errorf(http.StatusGatewayTimeout, api.ReasonTimeout, "the command did not end within %s in vm %q; it was killed", timeout, vm.Name)
	case errors.Is(err, hypervisor.ErrNoAgent):
		return errorf(http.StatusConflict, api.ReasonConflict, "vm %q has no guest agent answering (guestAgent is false), since it started and past its host's wait for one: its image needs QEMU's guest agent (Debian's qemu-guest-agent) to run commands", vm.Name)
	case errors.Is(err, hypervisor.ErrUnsupported):
		return errorf(http.StatusConflict, api.ReasonConflict, "vm %q runs on a hypervisor without a guest agent channel: %v", vm.Name, err)
	}
	return errorf(http.StatusBadGateway, api.ReasonInternalError, "run in vm %q: %v", vm.Name, err)
}

// runVM runs a program and answers its outputs and exit code.
func (s *guestAPI) runVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.RunRequest
	if err := decodeJSONMax(w, r, &req, maxRunBody); err != nil {
		return err
	}
	timeout, err := checkRun(req)
	if err != nil {
		return err
	}
	vm, err := s.runnable(r.Context(), p, "a command runs")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	res, err := s.execWhenUp(ctx, vm, hypervisor.ExecCommand{
		Argv: req.Command, Stdin: []byte(req.Stdin), Stdout: &stdout, Stderr: &stderr, MaxOutput: api.MaxRunOutput,
	})
	s.logRun(r.Context(), vm, req.Command[0], res.ExitCode, err)
	if err != nil {
		return runError(vm, timeout, err)
	}
	writeJSON(w, http.StatusOK, api.RunResult{
		ExitCode: res.ExitCode, Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated,
	})
	return nil
}

func (s *guestAPI) logRun(ctx context.Context, vm raftfsm.VM, program string, code int, err error) {
	s.log.Info("program run in a guest", "vm", vm.Namespace+"/"+vm.Name, "program", path.Base(program), "exitCode", code, "err", err, "by", owner(ctx))
}

// streamWriter sends each write as a binary message tagged with its stream.
type streamWriter struct {
	ctx    context.Context
	ws     *websocket.Conn
	stream byte
}

func (sw streamWriter) Write(b []byte) (int, error) {
	total := len(b)
	for len(b) > 0 {
		n := min(len(b), 64<<10)
		msg := append([]byte{sw.stream}, b[:n]...)
		if err := sw.ws.Write(sw.ctx, websocket.MessageBinary, msg); err != nil {
			return 0, err
		}
		b = b[n:]
	}
	return total, nil
}

// runVMStream is the websocket form of a run (see api.RunStreamStdout).
func (s *guestAPI) runVMStream(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	vm, err := s.runnable(r.Context(), p, "a command runs")
	if err != nil {
		return err
	}
	ws, err := websocket.Accept(w, r, acceptOptions())
	if err != nil {
		return nil // Accept has answered the client
	}
	defer ws.CloseNow()
	ws.SetReadLimit(maxRunBody)
	final := func(v any) {
		b, _ := json.Marshal(v)
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if ws.Write(wctx, websocket.MessageText, b) == nil {
			_ = ws.Close(websocket.StatusNormalClosure, "")
		}
	}
	fail := func(err error) {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = errorf(http.StatusInternalServerError, api.ReasonInternalError, "%v", err)
		}
		final(api.NewStatus(ae.code, ae.reason, ae.msg))
	}
	rctx, cancel := context.WithTimeout(context.Background(), runRequestWait)
	typ, body, err := ws.Read(rctx)
	cancel()
	if err != nil || typ != websocket.MessageText {
		fail(badRequest("the first message must be the run request (JSON text), sent within %s", runRequestWait))
		return nil
	}
	var req api.RunRequest
	if _, err := parseJSONObject(body, &req); err != nil {
		fail(err)
		return nil
	}
	timeout, err := checkRun(req)
	if err != nil {
		fail(err)
		return nil
	}
	// The client's leaving (its close) ends the run; the request's context
	// ended with the upgrade.
	ctx := ws.CloseRead(context.Background())
	ctx, cancel = context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := s.execWhenUp(ctx, vm, hypervisor.ExecCommand{
		Argv: req.Command, Stdin: []byte(req.Stdin), MaxOutput: api.MaxRunStreamOutput,
		Stdout: streamWriter{ctx, ws, api.RunStreamStdout}, Stderr: streamWriter{ctx, ws, api.RunStreamStderr},
	})
	s.logRun(r.Context(), vm, req.Command[0], res.ExitCode, err)
	if err != nil {
		fail(runError(vm, timeout, err))
		return nil
	}
	final(api.RunResult{ExitCode: res.ExitCode, StdoutTruncated: res.StdoutTruncated, StderrTruncated: res.StderrTruncated})
	return nil
}

// resizeVM grows the VM's disk on its host and answers the VM.
func (s *guestAPI) resizeVM(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var req api.ResizeRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	size, err := api.ParseSize(req.Size)
	switch {
	case err != nil:
		return badRequest(`field "size": %v`, err)
	case size <= 0:
		return badRequest(`field "size": %q is no size: give the disk's new size, larger than it is now, e.g. "20G"`, req.Size)
	}
	if size > maxDiskBytes {
		return badRequest(`field "size": %s is more than a disk may be (%d bytes)`, req.Size, int64(maxDiskBytes))
	}
	sctx, scancel := context.WithTimeout(r.Context(), s.cfg.LeaderWait)
	_ = s.ready.SyncReplica(sctx) // see the VM as the leader does
	scancel()
	vm, err := s.vmOf(p)
	if err != nil {
		return err
	}
	switch {
	case vm.PendingOp != nil:
		return errorf(http.StatusConflict, api.ReasonConflict, "vm %q is being written to an image (%s); resize it after", vm.Name, vm.PendingOp.Kind)
	case vm.Status != raftfsm.VMRunning && vm.Status != raftfsm.VMStopped && vm.Status != raftfsm.VMSuspended:
		return errorf(http.StatusConflict, api.ReasonConflict, "vm %q is %s: its disk grows once it is running, stopped or suspended", vm.Name, vm.Status)
	case s.guests == nil || vm.Node != s.replica.Name():
		return unavailable("2", "vm %q is on %s, which this peer cannot reach for this; retry", vm.Name, vm.Node)
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	cur, err := s.guests.ResizeDisk(ctx, vm, size)
	switch {
	case errors.Is(err, hypervisor.ErrShrink):
		return badRequest("vm %q has a disk of %s; a disk never shrinks (asked for %s)", vm.Name, api.FormatSize(cur), api.FormatSize(size))
	case errors.Is(err, hypervisor.ErrUnsupported), errors.Is(err, hypervisor.ErrNoSpace):
		return errorf(http.StatusConflict, api.ReasonConflict, "vm %q: %v", vm.Name, err)
	case errors.Is(err, raftfsm.ErrQuota):
		return err // 403, naming the quota
	case err != nil:
		return errorf(http.StatusInternalServerError, api.ReasonInternalError, "resize vm %q: %v", vm.Name, err)
	}
	s.log.Info("vm disk resized", "vm", vm.Namespace+"/"+vm.Name, "from", cur, "to", size, "by", owner(r.Context()))
	_ = s.replica.FSM().WaitOn(ctx, raftfsm.VMTopic(vm.Namespace, vm.Name), func() bool {
		cur, ok := s.replica.FSM().VM(vm.Namespace, vm.Name)
		return !ok || cur.DiskBytes >= size
	})
	vm, err = s.vmOf(p)
	if err != nil {
		return err
	}
	// The peer that forwarded this has the caller's next read wait for it.
	w.Header().Set(api.HeaderIndex, strconv.FormatUint(s.replica.FSM().Index(), 10))
	writeJSON(w, http.StatusOK, s.vmToAPI(vm))
	return nil
}

// maxDiskBytes bounds a disk's size (64 TiB).
const maxDiskBytes = 64 << 40
