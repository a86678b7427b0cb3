package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"

	"github.com/svc-project/svc/api"
)

// A browser sends the Origin of the page that opens a websocket; the peer
// the client reached judges it before the route runs, as the websocket
// library would: no Origin (a CLI), or one whose host is the request's
// Host, is let in, anything else is 403 with a Status. A request a peer
// forwarded over the fabric was judged there: the hop to the VM's host
// rewrites Host, so the host does not judge it again.

// checkOrigin refuses (403) a websocket whose Origin is not this peer's.
func checkOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	switch {
	case err != nil || u.Host == "":
		return errorf(http.StatusForbidden, api.ReasonForbidden, "the request's Origin %q is not a URL", origin)
	case !strings.EqualFold(u.Host, r.Host):
		return errorf(http.StatusForbidden, api.ReasonForbidden, "the request's Origin %q is not this peer's (%s)", origin, r.Host)
	}
	return nil
}

// acceptOptions are the websocket options of a stream route: the origin
// was judged before the route ran (see Server.handle).
func acceptOptions() *websocket.AcceptOptions {
	return &websocket.AcceptOptions{Subprotocols: []string{consoleSubprotocol}, InsecureSkipVerify: true}
}

// isUpgrade reports whether r asks for a websocket.
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}
