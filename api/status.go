package api

import (
	"errors"
	"fmt"
)

// Reasons carried in a Status body.
const (
	ReasonBadRequest            = "BadRequest"
	ReasonUnauthorized          = "Unauthorized"
	ReasonForbidden             = "Forbidden"
	ReasonNotFound              = "NotFound"
	ReasonAlreadyExists         = "AlreadyExists"
	ReasonConflict              = "Conflict"
	ReasonRequestEntityTooLarge = "RequestEntityTooLarge"
	ReasonTooManyRequests       = "TooManyRequests"
	ReasonServiceUnavailable    = "ServiceUnavailable"
	ReasonTimeout               = "Timeout"
	ReasonInternalError         = "InternalError"
)

// Status is the body of every error response, shaped like a Kubernetes Status.
type Status struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Status     string `json:"status"`
	Message    string `json:"message"`
	Reason     string `json:"reason"`
	Code       int    `json:"code"`
}

// NewStatus returns a failure Status with the given code, reason and message.
func NewStatus(code int, reason, message string) Status {
	return Status{APIVersion: "v1", Kind: "Status", Status: "Failure", Message: message, Reason: reason, Code: code}
}

// StatusError is an error answered by the API.
type StatusError struct {
	Status Status
	// RetryAfter is the Retry-After header of the response, if any.
	RetryAfter string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s (%d %s)", e.Status.Message, e.Status.Code, e.Status.Reason)
}

// ReasonOf returns the Status reason of err, or "" when err is not a *StatusError.
func ReasonOf(err error) string {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status.Reason
	}
	return ""
}

// CodeOf returns the HTTP status code of err, or 0 when err is not a *StatusError.
func CodeOf(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status.Code
	}
	return 0
}
