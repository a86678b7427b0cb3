package netgate

import "sync"

// Blocklist is a Gate that refuses the addresses blocked in it, as a
// network cut would; its zero value lets everything through. Tests cut
// peers off from each other with one.
type Blocklist struct {
	mu      sync.Mutex
	blocked map[string]bool
}

// Allowed reports whether addr is not blocked.
func (b *Blocklist) Allowed(addr string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.blocked[addr]
}

// Set blocks addr, or lets it through again.
func (b *Blocklist) Set(addr string, blocked bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blocked == nil {
		b.blocked = map[string]bool{}
	}
	b.blocked[addr] = blocked
}

// Clear lets every address through again.
func (b *Blocklist) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.blocked)
}
