package backoff

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Keyed is the back-off of each key. Its zero value is not ready: set
// First and Most (Jitter if wanted) and call nothing before. It is safe
// for concurrent use.
type Keyed struct {
	// First is the wait after a first failure; Most, the longest wait.
	First, Most time.Duration
	// Jitter makes each wait half its length plus a random part of the
	// other half.
	Jitter bool

	mu   sync.Mutex
	keys map[string]*entry
}

type entry struct {
	fails int
	until time.Time
}

// Wait is the wait after the n-th failure in a row, without jitter.
func (k *Keyed) Wait(n int) time.Duration {
	d := k.First
	for i := 1; i < n && d < k.Most; i++ {
		d *= 2
	}
	return min(d, k.Most)
}

// Fail records a failure of key at now and returns how long it waits.
func (k *Keyed) Fail(key string, now time.Time) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = map[string]*entry{}
	}
	e := k.keys[key]
	if e == nil {
		e = &entry{}
		k.keys[key] = e
	}
	e.fails++
	d := k.Wait(e.fails)
	if k.Jitter {
		d = d/2 + rand.N(d/2+1)
	}
	e.until = now.Add(d)
	return d
}

// Waiting reports whether key failed and its wait has not passed at now.
func (k *Keyed) Waiting(key string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	e := k.keys[key]
	return e != nil && now.Before(e.until)
}

// Forget ends key's back-off: its work succeeded (or room was made for it).
func (k *Keyed) Forget(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.keys, key)
}

// Reset forgets every key.
func (k *Keyed) Reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys = nil
}
