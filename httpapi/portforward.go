package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/hypervisor"
)

// A port forward is one TCP connection to a guest port over a websocket:
// the VM's host peer (the route's target) opens a forward to the port on
// loopback for as long as the websocket lasts and carries the bytes both
// ways; they are never logged. A client that wants many connections opens
// a websocket for each (svc vm port-forward does).

// portForward carries one connection to the guest port ?port=N.
func (s *guestAPI) portForward(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	port, err := strconv.Atoi(r.URL.Query().Get("port"))
	if err != nil || port < 1 || port > 65535 {
		return badRequest("query parameter \"port\": %q is not a TCP port (1 to 65535)", r.URL.Query().Get("port"))
	}
	vm, err := s.runnable(r.Context(), p, "its ports are reached")
	if err != nil {
		return err
	}
	octx, cancel := context.WithTimeout(r.Context(), consoleDialTimeout)
	defer cancel()
	addr, release, err := s.guests.GuestPort(octx, vm, port)
	if errors.Is(err, hypervisor.ErrUnsupported) {
		return errorf(http.StatusConflict, api.ReasonConflict, "vm %q: %v", vm.Name, err)
	}
	if err != nil {
		return unavailable("5", "forward port %d of vm %q: %v", port, vm.Name, err)
	}
	defer release()
	var d net.Dialer
	guest, err := d.DialContext(octx, "tcp", addr)
	if err != nil {
		return unavailable("5", "port %d of vm %q does not answer: %v", port, vm.Name, err)
	}
	defer guest.Close()
	client, err := acceptBinary(w, r)
	if err != nil {
		return nil // Accept has answered the client
	}
	defer client.Close()
	start := time.Now()
	s.log.Info("port forward opened", "vm", vm.Namespace+"/"+vm.Name, "port", port, "by", owner(r.Context()))
	splice(client, guest)
	s.log.Info("port forward closed", "vm", vm.Namespace+"/"+vm.Name, "port", port, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
