package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// RunVM runs a program in the VM's guest and returns how it ended, its
// outputs cut at MaxRunOutput bytes each. The answer comes when the
// program ends, so the call waits as long as the run may last (its
// TimeoutSeconds, DefaultRunTimeout without) and runAnswerWait more, even
// when the client's HTTP timeout is shorter; ctx may end it sooner.
func (c *Client) RunVM(ctx context.Context, namespace, vm string, req RunRequest) (RunResult, error) {
	var out RunResult
	bound := time.Duration(DefaultRunTimeout) * time.Second
	if req.TimeoutSeconds != nil {
		bound = time.Duration(*req.TimeoutSeconds) * time.Second
	}
	err := c.waitingAtLeast(bound+runAnswerWait).Do(ctx, http.MethodPost, nsPath(namespace, "vms", vm, "run"), req, &out)
	return out, err
}

// runAnswerWait is how long RunVM waits past the run's own bound for the
// answer: the guest's kill and the way back through the peers.
const runAnswerWait = 30 * time.Second

// waitingAtLeast returns c, or a copy of it whose HTTP client's timeout is
// at least d when c's is shorter (a timeout of 0, none, is kept).
func (c *Client) waitingAtLeast(d time.Duration) *Client {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: defaultHTTPTimeout}
	}
	if hc.Timeout == 0 || hc.Timeout >= d {
		return c
	}
	long := *hc
	long.Timeout = d
	cc := *c
	cc.HTTP = &long
	return &cc
}

// ResizeVM grows the VM's disk to size ("20G") and returns the VM.
func (c *Client) ResizeVM(ctx context.Context, namespace, vm, size string) (VM, error) {
	var out VM
	err := c.Do(ctx, http.MethodPost, nsPath(namespace, "vms", vm, "resize"), ResizeRequest{Size: size}, &out)
	return out, err
}

// dialVM opens a websocket on a VM's path (run, port-forward). A refusal
// before the upgrade is returned as its Status.
func (c *Client) dialVM(ctx context.Context, path string) (*websocket.Conn, error) {
	u := strings.TrimRight(c.BaseURL, "/") + path
	h := http.Header{}
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: h, Subprotocols: []string{"binary"}, HTTPClient: c.HTTP})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 && resp.Body != nil {
			data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			return nil, decodeStatus(resp, data)
		}
		return nil, err
	}
	return ws, nil
}

// RunVMStream runs a program in the VM's guest over a websocket, writing
// its outputs to stdout and stderr as they come; outputs are cut at
// MaxRunStreamOutput bytes each. A run that failed (no agent, timeout) is
// returned as its Status.
func (c *Client) RunVMStream(ctx context.Context, namespace, vm string, req RunRequest, stdout, stderr io.Writer) (RunResult, error) {
	ws, err := c.dialVM(ctx, nsPath(namespace, "vms", vm, "run"))
	if err != nil {
		return RunResult{}, fmt.Errorf("run in vm %s: %w", vm, err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	body, err := json.Marshal(req)
	if err != nil {
		return RunResult{}, err
	}
	if err := ws.Write(ctx, websocket.MessageText, body); err != nil {
		return RunResult{}, fmt.Errorf("run in vm %s: %w", vm, err)
	}
	for {
		typ, msg, err := ws.Read(ctx)
		if err != nil {
			return RunResult{}, fmt.Errorf("run in vm %s: the stream ended before the result: %w", vm, err)
		}
		if typ == websocket.MessageText {
			return runOutcome(msg)
		}
		if len(msg) == 0 {
			continue
		}
		w := stdout
		if msg[0] == RunStreamStderr {
			w = stderr
		}
		if w != nil {
			if _, err := w.Write(msg[1:]); err != nil {
				return RunResult{}, err
			}
		}
	}
}

// runOutcome reads the last message of a streamed run: a RunResult, or a
// Status when it failed.
func runOutcome(msg []byte) (RunResult, error) {
	var probe struct {
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal(msg, &probe); err != nil {
		return RunResult{}, fmt.Errorf("the run's result: %w", err)
	}
	if probe.Kind == "Status" {
		var st Status
		if err := json.Unmarshal(msg, &st); err != nil {
			return RunResult{}, err
		}
		return RunResult{}, &StatusError{Status: st}
	}
	var r RunResult
	return r, json.Unmarshal(msg, &r)
}

// DialVMPort opens one TCP connection to the VM's guest port through the
// API; closing it ends the connection.
func (c *Client) DialVMPort(ctx context.Context, namespace, vm string, port int) (net.Conn, error) {
	if port < 1 || port > 65535 {
		return nil, errors.New("a port is 1 to 65535")
	}
	ws, err := c.dialVM(ctx, nsPath(namespace, "vms", vm, "port-forward")+"?"+url.Values{"port": {strconv.Itoa(port)}}.Encode())
	if err != nil {
		return nil, fmt.Errorf("port %d of vm %s: %w", port, vm, err)
	}
	ws.SetReadLimit(1 << 20)
	return websocket.NetConn(context.WithoutCancel(ctx), ws, websocket.MessageBinary), nil
}
