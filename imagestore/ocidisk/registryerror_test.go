package ocidisk

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

func TestAsRegistryError_cases(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want error // nil: not the registry's
	}{
		{"a blob unknown", &transport.Error{StatusCode: http.StatusNotFound, Errors: []transport.Diagnostic{{Code: transport.BlobUnknownErrorCode, Message: "blob unknown"}}}, ErrRegistryRefused},
		{"denied", &transport.Error{StatusCode: http.StatusForbidden}, ErrRegistryRefused},
		{"plain HTTP", fmt.Errorf("x: %w", ErrPlainHTTP), ErrRegistryRefused},
		{"an address not allowed", fmt.Errorf("x: %w", ErrUnreachable), ErrRegistryRefused},
		{"its own failure", &transport.Error{StatusCode: http.StatusBadGateway}, ErrRegistryFailed},
		{"too many requests", &transport.Error{StatusCode: http.StatusTooManyRequests}, ErrRegistryFailed},
		{"no answer", fmt.Errorf("pull: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), ErrRegistryFailed},
		{"this host's disk", fmt.Errorf("write: %w", os.ErrPermission), nil},
		{"no error at all", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			re, ok := AsRegistryError("reg/x:1", c.err)
			switch {
			case c.want == nil && ok:
				t.Fatalf("%v taken for the registry's: %v", c.err, re)
			case c.want != nil && (!ok || !errors.Is(re, c.want)):
				t.Fatalf("AsRegistryError(%v) = %v %v, want %v", c.err, re, ok, c.want)
			}
		})
	}
}
