package runnerpool

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/svc-project/svc/imagestore/ocidisk"
)

// egressNamed carries a pool's requests to GitHub through the peer's
// egress policy (the one registries and identity providers are reached
// through), and says in GitHub's terms which rule refused one.
type egressNamed struct{ next http.RoundTripper }

func (t egressNamed) RoundTrip(r *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if errors.Is(err, ocidisk.ErrUnreachable) {
		return nil, fmt.Errorf("GitHub at %s is refused by this peer's egress rule: only public addresses and those the agent's --registry-allow lists may be reached (a GitHub Enterprise Server on a private address needs its host name or address range there, on every peer): %w", r.URL.Host, ocidisk.ErrUnreachable)
	}
	return resp, err
}
