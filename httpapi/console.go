package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/internal/netgate"
	"github.com/svc-project/svc/internal/rfb"
	"github.com/svc-project/svc/raftfsm"
)

// The console is a VM's screen over a websocket: any peer accepts it and
// carries RFB between the client and the VM's VNC server on its host, having
// logged in there with the VM's VNC password, so that the client sees RFB
// with no security of its own: the API token authorized it.
//
// A browser cannot set Authorization on a websocket. It sends the token as
// a subprotocol instead, next to "binary" (as Kubernetes does):
// "base64url.bearer.authorization.svc.<the token in unpadded base64url>".
// Another site cannot ride it: it has no token, and the origin is checked.

// ConsoleTokenProtocol prefixes the subprotocol that carries a token.
const ConsoleTokenProtocol = "base64url.bearer.authorization.svc."

// consoleSubprotocol is the one the server selects (noVNC's).
const consoleSubprotocol = "binary"

// consoleDialTimeout bounds reaching and logging in to the VNC server.
const consoleDialTimeout = 10 * time.Second

// consoleHandshakeTimeout bounds a client's RFB opening after the upgrade:
// a websocket that never speaks is closed.
const consoleHandshakeTimeout = 10 * time.Second

// tokenFromSubprotocol moves a token sent as a websocket subprotocol into
// the Authorization header, where the route's authorization reads it.
func tokenFromSubprotocol(r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		return
	}
	for _, h := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, p := range strings.Split(h, ",") {
			enc, ok := strings.CutPrefix(strings.TrimSpace(p), ConsoleTokenProtocol)
			if !ok {
				continue
			}
			if tok, err := base64.RawURLEncoding.DecodeString(enc); err == nil {
				r.Header.Set("Authorization", "Bearer "+string(tok))
			}
			return
		}
	}
}

// console accepts the websocket and carries the VM's screen.
func (s *guestAPI) console(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	vm, err := s.vmOf(p)
	if err != nil {
		return err
	}
	ns, name := vm.Namespace, vm.Name
	if vm.Status != raftfsm.VMRunning && vm.Status != raftfsm.VMSuspended {
		return errorf(http.StatusConflict, api.ReasonConflict, "vm %q is %s: its screen shows only while it runs", name, vm.Status)
	}
	addr := net.JoinHostPort(vm.IP, strconv.Itoa(vm.VNCPort))
	if err := netgate.Check(s.cfg.Gate, addr); err != nil {
		return unavailable("5", "this peer may not reach %s", addr)
	}
	dctx, cancel := context.WithTimeout(r.Context(), consoleDialTimeout)
	defer cancel()
	var d net.Dialer
	vnc, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return unavailable("5", "the screen of vm %q on %s does not answer: %v", name, vm.Node, err)
	}
	defer vnc.Close()
	_ = vnc.SetDeadline(time.Now().Add(consoleDialTimeout))
	if _, err := rfb.Login(vnc, vm.VNCPassword); err != nil {
		return unavailable("5", "log in to the screen of vm %q: %v", name, err)
	}
	// QEMU takes 32 viewers of a screen and drops the next at ClientInit:
	// that is found out before the upgrade, so the client gets a Status.
	serverInit, err := rfb.ClientInitRaw(vnc)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return errorf(http.StatusTooManyRequests, api.ReasonTooManyRequests, "the screen of vm %q has as many viewers as it takes (QEMU's limit is 32); close one and try again", name)
	}
	if err != nil {
		return unavailable("5", "open the screen of vm %q: %v", name, err)
	}
	_ = vnc.SetDeadline(time.Time{})
	client, err := acceptBinary(w, r)
	if err != nil {
		return nil // Accept has answered the client
	}
	defer client.Close()
	_ = client.SetDeadline(time.Now().Add(consoleHandshakeTimeout))
	err = rfb.ServeNone(client)
	if err == nil {
		err = rfb.ServeInit(client, serverInit)
	}
	if err != nil {
		s.log.Info("console client left or stalled during the opening", "vm", ns+"/"+name, "err", err)
		return nil
	}
	_ = client.SetDeadline(time.Time{})
	s.log.Info("console opened", "vm", ns+"/"+name, "node", vm.Node, "by", owner(r.Context()))
	s.metrics.consoles.Inc()
	defer s.metrics.consoles.Dec()
	splice(client, vnc)
	s.log.Info("console closed", "vm", ns+"/"+name)
	return nil
}

// acceptBinary upgrades the request to a websocket (subprotocol binary)
// and returns it as a connection of binary messages, which lives until it
// is closed (the request's context ends with the upgrade).
func acceptBinary(w http.ResponseWriter, r *http.Request) (net.Conn, error) {
	ws, err := websocket.Accept(w, r, acceptOptions())
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(1 << 20)
	return websocket.NetConn(context.Background(), ws, websocket.MessageBinary), nil
}

// splice carries bytes both ways between a and b until either side ends,
// which ends both.
func splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	carry := func(dst, src net.Conn) { _, _ = io.Copy(dst, src); done <- struct{}{} }
	go carry(a, b)
	go carry(b, a)
	<-done
	_ = a.Close()
	_ = b.Close()
	<-done
}
