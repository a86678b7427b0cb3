package ocidisk

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Registry is how to reach the registry of a reference.
type Registry struct {
	// Username and Password authenticate (basic, or the registry's token
	// service); none for a public registry.
	Username, Password string
	// Insecure allows plain HTTP and TLS without certificate verification.
	Insecure bool
	// Jobs is how many chunks move at once (default 4).
	Jobs int
	// Egress, when set, is the addresses this peer may contact: every
	// connection to the registry is checked against it when dialled.
	Egress *Egress
}

// ErrBadReference is wrapped when a reference cannot be parsed or has no tag
// or digest.
var ErrBadReference = errors.New("bad image reference")

// ErrBadImage is wrapped when a registry's image is malformed (its
// manifest, config or layers are not what they say): the caller's error,
// not a registry to try again.
var ErrBadImage = errors.New("malformed image")

func badImage(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadImage}, args...)...)
}

// ParseReference reads "<registry>/<path>:<tag>" or "...@sha256:...". A
// registry host is required (no implicit Docker Hub). A reference without a
// tag or digest takes "latest" when latest is true (push) and is refused
// otherwise (deploy and pull: a disk is never pulled as "latest" by accident).
func ParseReference(ref string, insecure, latest bool) (name.Reference, error) {
	if err := checkReference(ref, latest, false); err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrBadReference, ref, err)
	}
	opts := []name.Option{name.StrictValidation}
	if insecure {
		opts = append(opts, name.Insecure)
	}
	last := ref[strings.LastIndex(ref, "/")+1:]
	if !strings.ContainsAny(last, ":@") {
		if !latest {
			return nil, fmt.Errorf("%w %q: it needs a tag (<registry>/<path>:<tag>) or a digest", ErrBadReference, ref)
		}
		ref += ":latest"
	}
	r, err := name.ParseReference(ref, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrBadReference, ref, err)
	}
	if first, _, _ := strings.Cut(ref, "/"); !strings.ContainsAny(first, ".:") && first != "localhost" {
		return nil, fmt.Errorf("%w %q: it needs a registry host (<registry>/<path>:<tag>)", ErrBadReference, ref)
	}
	return r, nil
}

func (r Registry) jobs() int {
	if r.Jobs <= 0 {
		return 4
	}
	return r.Jobs
}

// options are the remote options for talking to the registry.
func (r Registry) options(ctx context.Context) []remote.Option {
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	if r.Egress != nil {
		tr.DialContext = r.Egress.Dialer()
	}
	if r.Insecure {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for: allowInsecure
	}
	auth := authn.Anonymous
	if r.Username != "" || r.Password != "" {
		auth = &authn.Basic{Username: r.Username, Password: r.Password}
	}
	var rt http.RoundTripper = tr
	if !r.Insecure {
		rt = httpsOnly{tr}
	}
	return []remote.Option{
		remote.WithContext(ctx), remote.WithAuth(auth), remote.WithTransport(rt),
		remote.WithJobs(r.jobs()), remote.WithUserAgent("svc"),
	}
}

// ErrPlainHTTP is wrapped when a registry would be reached over plain HTTP
// without Insecure (go-containerregistry falls back to HTTP for loopback and
// private addresses on its own).
var ErrPlainHTTP = errors.New("plain HTTP to a registry needs allowInsecure")

// ErrUnreachable is wrapped when a peer's policy keeps it from a registry's
// address.
var ErrUnreachable = errors.New("registry not allowed")

// httpsOnly refuses requests over plain HTTP.
type httpsOnly struct{ next http.RoundTripper }

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("%s: %w", req.URL.Host, ErrPlainHTTP)
	}
	return h.next.RoundTrip(req)
}

// Reason turns a registry's error into a sentence for a job's message or a
// Status: the registry's own codes and messages when it sent some.
func Reason(err error) string {
	var te *transport.Error
	if errors.As(err, &te) {
		var parts []string
		for _, d := range te.Errors {
			parts = append(parts, fmt.Sprintf("%s: %s", d.Code, d.Message))
		}
		if len(parts) == 0 {
			return fmt.Sprintf("the registry answered %d %s", te.StatusCode, http.StatusText(te.StatusCode))
		}
		return fmt.Sprintf("the registry answered %d: %s", te.StatusCode, strings.Join(parts, "; "))
	}
	switch {
	case errors.Is(err, ErrUnreachable), errors.Is(err, ErrBadReference):
		return err.Error()
	case errors.Is(err, ErrPlainHTTP) && !untrusted(err):
		// HTTPS failed, and plain HTTP is not allowed: how HTTPS failed is
		// not told (see networkFailure).
		return "no registry answered over HTTPS at that address; one that serves plain HTTP needs its registry credential with allowInsecure"
	case untrusted(err):
		return "the registry's TLS certificate is not trusted: give it a trusted certificate, or add its registry credential with allowInsecure"
	case networkFailure(err):
		// No detail: it would tell a refused port from a closed one.
		return errNoAnswer.Error()
	}
	return err.Error()
}

// IsUnauthorized tells whether the registry refused the credentials.
func IsUnauthorized(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden)
}

// IsNotFound tells whether the registry has no such manifest or repository.
func IsNotFound(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	if te.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range te.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}
