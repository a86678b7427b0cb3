package vz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
)

// The runner's control protocol: one JSON request per connection on the
// VM's unix socket, one JSON response, then the runner closes it.

// Control operations.
const (
	opState  = "state"
	opStop   = "stop"   // ask the guest, force it off after GraceSeconds
	opKill   = "kill"   // force it off now
	opPause  = "pause"  // hold it, memory and all
	opResume = "resume" // let a held machine go on
	opSave   = "save"   // pause, write memory and devices to Path, stop
)

// request is what the supervisor asks a runner.
type request struct {
	Op           string `json:"op"`
	GraceSeconds int    `json:"graceSeconds,omitempty"`
	Path         string `json:"path,omitempty"`
}

// response is a runner's answer: the machine's state after the request,
// and the request's error.
type response struct {
	State MachineState `json:"state"`
	PID   int          `json:"pid"`
	Error string       `json:"error,omitempty"`
}

// Bounds of the protocol.
const (
	maxControlMessage = 4 << 10
	controlDialWait   = 2 * time.Second
	// maxGrace bounds a stop's wait for the guest.
	maxGrace = 10 * time.Minute
)

// errNoRunner is returned for a VM whose runner does not answer: the
// machine is not running.
var errNoRunner = errors.New("the VM's runner is not running")

// ask sends one request to the runner listening on sock. A runner that
// is not there is errNoRunner; a request it refused is the runner's error.
func ask(ctx context.Context, sock string, req request) (response, error) {
	d := net.Dialer{Timeout: controlDialWait}
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return response{}, fmt.Errorf("%w: %w", errNoRunner, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			return response{}, fmt.Errorf("%w: %w", errNoRunner, err)
		}
		return response{}, fmt.Errorf("runner %s: send %s: %w", sock, req.Op, err)
	}
	var resp response
	if err := json.NewDecoder(io.LimitReader(conn, maxControlMessage)).Decode(&resp); err != nil {
		if ctx.Err() != nil {
			return response{}, ctx.Err()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			// a runner that hangs up without an answer is ending
			return response{}, fmt.Errorf("%w: it hung up: %w", errNoRunner, err)
		}
		return response{}, fmt.Errorf("runner %s: answer to %s: %w", sock, req.Op, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("runner: %s: %s", req.Op, resp.Error)
	}
	return resp, nil
}
