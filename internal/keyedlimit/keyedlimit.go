package keyedlimit

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a token bucket per key. Its methods may be called from many
// goroutines at once.
type Limiter struct {
	every rate.Limit
	burst int
	max   int
	idle  time.Duration

	mu      sync.Mutex
	clients map[string]*client
	swept   time.Time
}

type client struct {
	lim  *rate.Limiter
	seen time.Time
}

// New returns a Limiter that lets each key act perSecond times a second in
// bursts of burst, remembers at most maxKeys keys, and forgets a key idle
// for idle.
func New(perSecond float64, burst, maxKeys int, idle time.Duration) *Limiter {
	return &Limiter{every: rate.Limit(perSecond), burst: burst, max: maxKeys, idle: idle, clients: map[string]*client{}}
}

// Blocked reports whether key has used up its bucket (a key never seen has
// not).
func (l *Limiter) Blocked(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.clients[key]
	return ok && c.lim.TokensAt(now) < 1
}

// Spend takes one from key's bucket, whether or not it has one left: a
// failure counted after the fact. A new key while maxKeys are remembered
// is not counted.
func (l *Limiter) Spend(key string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.clientLocked(key, now); c != nil {
		c.lim.AllowN(now, 1)
	}
}

// Allow takes one from key's bucket and reports whether it had one. A new
// key while maxKeys are remembered (each active within idle) is refused:
// such a crowd is refused until some of it goes quiet.
func (l *Limiter) Allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.clientLocked(key, now)
	return c != nil && c.lim.AllowN(now, 1)
}

// clientLocked returns key's bucket, made if there is room (nil if not),
// sweeping idle keys now and then.
func (l *Limiter) clientLocked(key string, now time.Time) *client {
	if now.Sub(l.swept) > l.idle || len(l.clients) >= l.max {
		for k, c := range l.clients {
			if now.Sub(c.seen) > l.idle {
				delete(l.clients, k)
			}
		}
		l.swept = now
	}
	c, ok := l.clients[key]
	if !ok {
		if len(l.clients) >= l.max {
			return nil
		}
		c = &client{lim: rate.NewLimiter(l.every, l.burst)}
		l.clients[key] = c
	}
	c.seen = now
	return c
}
