package netgate

import (
	"errors"
	"testing"
)

// A blocklist refuses what is blocked in it, and only that, until it is
// let through again.
func TestBlocklist_set(t *testing.T) {
	var b Blocklist
	const a, other = "10.0.0.1:1", "10.0.0.2:1"
	if err := Check(&b, a); err != nil {
		t.Fatalf("the zero blocklist: %v", err)
	}
	b.Set(a, true)
	if err := Check(&b, a); !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked: %v", err)
	}
	if !b.Allowed(other) {
		t.Fatal("an address never blocked is refused")
	}
	b.Set(a, false)
	if !b.Allowed(a) {
		t.Fatal("an address let through again is refused")
	}
	b.Set(a, true)
	b.Set(other, true)
	b.Clear()
	if !b.Allowed(a) || !b.Allowed(other) {
		t.Fatal("an address is refused after Clear")
	}
}
