package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// Every rule's kind is answered with its own reason, and that reason turns
// back into the same kind (a write forwarded to the leader keeps it).
func TestKindOf_round_trip(t *testing.T) {
	kinds := []error{raftfsm.ErrNotFound, raftfsm.ErrAlreadyExists, raftfsm.ErrQuota, raftfsm.ErrConflict,
		raftfsm.ErrInvalid, raftfsm.ErrTooMany, raftfsm.ErrTooLarge, raftfsm.ErrNotLeader, raftfsm.ErrTimeout}
	reasons := map[string]bool{}
	for _, kind := range kinds {
		t.Run(kind.Error(), func(t *testing.T) {
			ae := toAPIError(raftfsm.NewRuleError(kind, "the rule's words"))
			if ae.code < 400 || ae.code == http.StatusInternalServerError {
				t.Fatalf("answered %d", ae.code)
			}
			if reasons[ae.reason] {
				t.Fatalf("reason %s answers two kinds", ae.reason)
			}
			reasons[ae.reason] = true
			if back := KindOf(ae.reason); !errors.Is(back, kind) {
				t.Fatalf("reason %s turns back into %v", ae.reason, back)
			}
		})
	}
}

func TestToAPIError_cases(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		code   int
		reason string
		retry  string
	}{
		{"wrapped kind", fmt.Errorf("apply: %w", raftfsm.ErrTooMany), http.StatusTooManyRequests, api.ReasonTooManyRequests, "10"},
		{"api's invalid", fmt.Errorf("x: %w", api.ErrInvalid), http.StatusBadRequest, api.ReasonBadRequest, ""},
		{"leader lost", raftfsm.ErrNotLeader, http.StatusServiceUnavailable, api.ReasonServiceUnavailable, "1"},
		{"another peer's refusal", &api.StatusError{Status: api.NewStatus(http.StatusConflict, api.ReasonConflict, "taken")}, http.StatusConflict, api.ReasonConflict, ""},
		{"anything else", errors.New("disk on fire"), http.StatusInternalServerError, api.ReasonInternalError, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ae := toAPIError(c.err)
			if ae.code != c.code || ae.reason != c.reason || ae.retryAfter != c.retry {
				t.Fatalf("got %d %s retry %q", ae.code, ae.reason, ae.retryAfter)
			}
		})
	}
}
