package httpapi

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/coder/websocket"
)

// A browser sends the Origin of the page that opens a websocket; the peer
// the client reached judges it before the route runs, as the websocket
// library would: no Origin (a CLI), or one whose host is the request's
// Host, is let in, anything else is 403 with a Status. A request a peer
// forwarded over the fabric was judged there: the hop to the VM's host
// rewrites Host, so the host does not judge it again.

// originAllowed reports whether the request's Origin may open a websocket
// here, and why not.
func originAllowed(r *http.Request) (bool, string) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true, ""
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false, "the request's Origin " + origin + " is not a URL"
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return false, "the request's Origin " + origin + " is not this peer's (" + r.Host + ")"
	}
	return true, ""
}

// acceptOptions are the websocket options of a stream route: the origin
// was judged before the route ran (see Server.handle).
func acceptOptions(*http.Request) *websocket.AcceptOptions {
	return &websocket.AcceptOptions{Subprotocols: []string{consoleSubprotocol}, InsecureSkipVerify: true}
}

// isUpgrade reports whether r asks for a websocket.
func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}
