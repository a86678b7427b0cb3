package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
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

// authFails slows clients whose calls fail authentication, per address.
type authFails struct {
	mu      sync.Mutex
	clients map[string]*authFailClient
	swept   time.Time
}

type authFailClient struct {
	lim  *rate.Limiter
	seen time.Time
}

func newAuthFails() *authFails { return &authFails{clients: map[string]*authFailClient{}} }

// blocked reports whether the client at ip has used up its failures.
func (a *authFails) blocked(ip string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.clients[ip]
	return ok && c.lim.TokensAt(now) < 1
}

// failed counts one failed authentication of the client at ip.
func (a *authFails) failed(ip string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if now.Sub(a.swept) > authFailIdle || len(a.clients) >= authFailClients {
		for k, c := range a.clients {
			if now.Sub(c.seen) > authFailIdle {
				delete(a.clients, k)
			}
		}
		a.swept = now
	}
	c, ok := a.clients[ip]
	if !ok {
		if len(a.clients) >= authFailClients {
			return // every slot busy within a minute: the connection limits hold such a crowd
		}
		c = &authFailClient{lim: rate.NewLimiter(authFailRate, authFailBurst)}
		a.clients[ip] = c
	}
	c.seen = now
	c.lim.AllowN(now, 1)
}

// clientIP is the address a request came from.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
