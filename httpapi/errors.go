package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/diskbudget"
	"github.com/svc-project/svc/raftfsm"
)

// apiError is an error with the status it should be answered with.
type apiError struct {
	code       int
	reason     string
	msg        string
	retryAfter string
}

func (e *apiError) Error() string { return e.msg }

func errorf(code int, reason, format string, args ...any) *apiError {
	return &apiError{code: code, reason: reason, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, api.ReasonBadRequest, format, args...)
}

func notFound(format string, args ...any) *apiError {
	return errorf(http.StatusNotFound, api.ReasonNotFound, format, args...)
}

func unavailable(retryAfter, format string, args ...any) *apiError {
	e := errorf(http.StatusServiceUnavailable, api.ReasonServiceUnavailable, format, args...)
	e.retryAfter = retryAfter
	return e
}

// ruleKinds are the error kinds of the FSM's rules and how each is
// answered: one table for both ways, so that a write a peer proposed
// through the leader keeps its kind (KindOf).
var ruleKinds = [...]struct {
	kind       error
	code       int
	reason     string
	retryAfter string
	prefix     string
}{
	{kind: raftfsm.ErrNotFound, code: http.StatusNotFound, reason: api.ReasonNotFound},
	{kind: raftfsm.ErrAlreadyExists, code: http.StatusConflict, reason: api.ReasonAlreadyExists},
	{kind: raftfsm.ErrQuota, code: http.StatusForbidden, reason: api.ReasonForbidden},
	{kind: raftfsm.ErrConflict, code: http.StatusConflict, reason: api.ReasonConflict},
	{kind: raftfsm.ErrInvalid, code: http.StatusBadRequest, reason: api.ReasonBadRequest},
	{kind: raftfsm.ErrTooMany, code: http.StatusTooManyRequests, reason: api.ReasonTooManyRequests, retryAfter: "10"},
	{kind: raftfsm.ErrTooLarge, code: http.StatusRequestEntityTooLarge, reason: api.ReasonRequestEntityTooLarge},
	{kind: raftfsm.ErrNotLeader, code: http.StatusServiceUnavailable, reason: api.ReasonServiceUnavailable, retryAfter: "1",
		prefix: "leadership changed while the write was in flight; retry: "},
	{kind: raftfsm.ErrTimeout, code: http.StatusGatewayTimeout, reason: api.ReasonTimeout},
}

// KindOf returns the FSM's error kind a Status reason answers (nil for a
// reason no rule gives): the way back of ruleKinds.
func KindOf(reason string) error {
	for _, k := range ruleKinds {
		if k.reason == reason {
			return k.kind
		}
	}
	return nil
}

// toAPIError maps any error to the status it is answered with, by kind
// (errors.Is), never by message text.
func toAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var re *raftfsm.RuleError
	if errors.As(err, &re) {
		err = re // answer with the rule's own words, not the layers around it
	}
	var se *api.StatusError
	if errors.As(err, &se) && se.Status.Code >= 400 && se.Status.Code < 500 {
		// another peer's refusal (the leader's, on a write this peer
		// proposed) is answered as that peer answered it
		return errorf(se.Status.Code, se.Status.Reason, "%s", se.Status.Message)
	}
	for _, k := range ruleKinds {
		if errors.Is(err, k.kind) {
			return &apiError{code: k.code, reason: k.reason, msg: k.prefix + err.Error(), retryAfter: k.retryAfter}
		}
	}
	if errors.Is(err, diskbudget.ErrNoRoom) {
		// a full disk is a conflict with what the peer holds, never a fault
		return errorf(http.StatusConflict, api.ReasonConflict, "%s", err.Error())
	}
	return errorf(http.StatusInternalServerError, api.ReasonInternalError, "internal error: %s", err.Error())
}

// writeError answers err as a Status body.
func writeError(w http.ResponseWriter, log *slog.Logger, err error) {
	ae := toAPIError(err)
	if ae.code >= 500 {
		log.Warn("request failed", "code", ae.code, "err", err)
	}
	if ae.retryAfter != "" {
		w.Header().Set("Retry-After", ae.retryAfter)
	}
	writeJSON(w, ae.code, api.NewStatus(ae.code, ae.reason, ae.msg))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b, _ = json.Marshal(api.NewStatus(code, api.ReasonInternalError, "encode answer: "+err.Error()))
	}
	b = append(b, '\n')
	w.Header().Set("Content-Type", "application/json")
	// Its length, so that the answer is whole before a body still on its
	// way is read (drainBody): a chunked answer ends with the handler.
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
