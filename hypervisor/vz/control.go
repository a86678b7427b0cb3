package vz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/svc-project/svc/hypervisor"
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
	opClaim  = "claim"  // a hot guest becomes Claim's VM: serve its ports and screen
)

// request is what the supervisor asks a runner.
type request struct {
	Op           string `json:"op"`
	GraceSeconds int    `json:"graceSeconds,omitempty"`
	Path         string `json:"path,omitempty"`
	// Claim is the VM a hot guest becomes (opClaim).
	Claim *claimRequest `json:"claim,omitempty"`
}

// claimRequest is what a hot guest's runner serves once the guest is a
// VM's: the VM's forwards and screen, on its node address.
type claimRequest struct {
	ListenAddr  string               `json:"listenAddr"`
	Forwards    []hypervisor.Forward `json:"forwards,omitempty"`
	VNCPort     int                  `json:"vncPort,omitempty"`
	VNCPassword string               `json:"vncPassword,omitempty"`
}

// maxClaimForwards bounds a claim's forwards (a VM's SSH, screen sharing
// and reserved ports).
const maxClaimForwards = 64

// check refuses a claim the runner could not serve whole.
func (c *claimRequest) check() error {
	if c == nil {
		return errors.New("claim: no VM named")
	}
	if _, err := netip.ParseAddr(c.ListenAddr); err != nil {
		return fmt.Errorf("claim: listen address %q: %w", c.ListenAddr, err)
	}
	if len(c.Forwards) > maxClaimForwards {
		return fmt.Errorf("claim: %d forwards, at most %d", len(c.Forwards), maxClaimForwards)
	}
	for _, f := range c.Forwards {
		if f.HostPort < 1 || f.HostPort > 65535 || f.GuestPort < 1 || f.GuestPort > 65535 {
			return fmt.Errorf("claim: forward %d to %d: ports are 1 to 65535", f.HostPort, f.GuestPort)
		}
	}
	if c.VNCPort != 0 && (c.VNCPort < 1 || c.VNCPort > 65535 || c.VNCPassword == "") {
		return fmt.Errorf("claim: screen port %d needs a port of 1 to 65535 and the VM's password", c.VNCPort)
	}
	return nil
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
	maxControlMessage = 16 << 10 // a claim's forwards among it
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
