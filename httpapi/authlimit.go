package httpapi

import (
	"net"
	"net/http"
	"time"

	"github.com/svc-project/svc/internal/keyedlimit"
)

// Bounds of the calls a client may make without a valid token.
const (
	// authFailRate and authFailBurst: a client address may fail
	// authentication this often (per second), in bursts of this many; past
	// that its calls are refused (429) before any token is checked, and are
	// not written to the audit log one by one (a metric counts them).
	authFailRate  = 10
	authFailBurst = 50
	// authFailClients bounds the addresses remembered; an address idle for
	// authFailIdle is forgotten.
	authFailClients = 10_000
	authFailIdle    = time.Minute
)

// Bounds of the sign-in steps a client address may take (Route.SignIn):
// a person signing in takes two (or a device start and a poll every few
// seconds); a client past them is guessing codes or flooding the provider.
const (
	signInRate    = 1 // per second
	signInBurst   = 20
	signInClients = 10_000
)

// newSignInLimit bounds the sign-in steps per client address.
func newSignInLimit() *keyedlimit.Limiter {
	return keyedlimit.New(signInRate, signInBurst, signInClients, authFailIdle)
}

// newAuthFails slows clients whose calls fail authentication, per
// address: Spend counts a failure, Blocked tells a client that used up its
// failures.
func newAuthFails() *keyedlimit.Limiter {
	return keyedlimit.New(authFailRate, authFailBurst, authFailClients, authFailIdle)
}

// clientIP is the address a request came from.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
