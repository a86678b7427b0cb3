package ocidisk

import (
	"errors"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// A pull that fails because of the registry is the registry's failure,
// never the server's: the API answers it as such, with the registry's own
// words (Reason).
var (
	// ErrRegistryRefused is wrapped by a pull the registry refused: it
	// answered the request with an error of the request (a 4xx: unknown,
	// denied, unauthorised), or cannot be spoken to as the reference
	// asks (plain HTTP, an untrusted certificate, an address not allowed).
	// The caller has it to fix: a 400.
	ErrRegistryRefused = errors.New("the registry refused the pull")
	// ErrRegistryFailed is wrapped by a pull the registry failed: it did
	// not answer, or answered with an error of its own (a 5xx). It may
	// pass: a 502.
	ErrRegistryFailed = errors.New("the registry failed the pull")
)

// RegistryError is a pull that failed because of the registry at Ref,
// for Reason (Reason's words).
type RegistryError struct {
	Ref, Reason string
	kind        error
}

func (e *RegistryError) Error() string { return "pull " + e.Ref + ": " + e.Reason }

// Unwrap makes it an ErrRegistryRefused or an ErrRegistryFailed.
func (e *RegistryError) Unwrap() error { return e.kind }

// AsRegistryError returns err as a RegistryError of the pull of ref when
// the registry caused it, and false for any other failure (this host's).
func AsRegistryError(ref string, err error) (*RegistryError, bool) {
	if err == nil {
		return nil, false
	}
	var te *transport.Error
	switch {
	case errors.As(err, &te) && te.StatusCode >= 400 && te.StatusCode < 500 && te.StatusCode != http.StatusTooManyRequests && te.StatusCode != http.StatusRequestTimeout:
		return &RegistryError{Ref: ref, Reason: Reason(err), kind: ErrRegistryRefused}, true
	case errors.Is(err, ErrPlainHTTP), untrusted(err), errors.Is(err, ErrUnreachable), errors.Is(err, ErrBadReference), errors.Is(err, ErrNoDisk):
		return &RegistryError{Ref: ref, Reason: Reason(err), kind: ErrRegistryRefused}, true
	case errors.As(err, &te), networkFailure(err):
		return &RegistryError{Ref: ref, Reason: Reason(err), kind: ErrRegistryFailed}, true
	}
	return nil, false
}
