package ocidisk

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// The grammar of a reference, as the OCI distribution spec and Docker write
// it, checked before go-containerregistry reads it (which lets a missing or
// dashed host, a port over 65535, empty or dot path components and a tag
// with a digest through, to fail later as a 503 or a job that cannot run).
var (
	dnsNameRE = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
	pathRE    = regexp.MustCompile(`^[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:\.|_|__|-+)[a-z0-9]+)*)*$`)
	tagRE     = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE  = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// maxReference bounds a whole reference.
const maxReference = 512

// checkReference checks "<registry>/<path>[:<tag>][@<digest>]". push says
// the reference is pushed to, which needs a tag, not a digest; user says a
// user wrote it, who gives a tag or a digest, not both (svc itself pins a
// tagged reference to the digest it resolved to).
func checkReference(ref string, push, user bool) error {
	if len(ref) > maxReference {
		return fmt.Errorf("it is over %d characters", maxReference)
	}
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || rest == "" {
		return fmt.Errorf("it needs a registry host and a path (<registry>/<path>:<tag>)")
	}
	if err := checkRegistry(host); err != nil {
		return err
	}
	repo, digest, hasDigest := strings.Cut(rest, "@")
	path, tag := repo, ""
	if i := strings.LastIndex(repo, ":"); i >= 0 {
		path, tag = repo[:i], repo[i+1:]
		if !tagRE.MatchString(tag) {
			return fmt.Errorf("tag %q is not letters, digits, '_', '.' and '-' (at most 128, not starting with '.' or '-')", tag)
		}
	}
	switch {
	case !pathRE.MatchString(path):
		return fmt.Errorf("path %q is not lowercase components separated by '/' (each letters and digits joined by '.', '_', '__' or '-')", path)
	case user && hasDigest && tag != "":
		return fmt.Errorf("it has both a tag and a digest; give one")
	case hasDigest && !digestRE.MatchString(digest):
		return fmt.Errorf("digest %q is not sha256:<64 lowercase hex digits>", digest)
	case hasDigest && push:
		return fmt.Errorf("a push goes to a tag, not a digest")
	}
	return nil
}

// checkRegistry checks a registry host: a DNS name, an IPv4 address or a
// bracketed IPv6 address, with an optional port from 1 to 65535.
func checkRegistry(host string) error {
	h, port := host, ""
	if strings.HasPrefix(h, "[") {
		end := strings.Index(h, "]")
		if end < 0 {
			return fmt.Errorf("registry %q: an IPv6 address is written [address]", host)
		}
		if ip := net.ParseIP(h[1:end]); ip == nil || ip.To4() != nil {
			return fmt.Errorf("registry %q: %q is not an IPv6 address", host, h[1:end])
		}
		rest := h[end+1:]
		if rest != "" && !strings.HasPrefix(rest, ":") {
			return fmt.Errorf("registry %q: only a port may follow the address", host)
		}
		port = strings.TrimPrefix(rest, ":")
		if rest != "" && port == "" {
			return fmt.Errorf("registry %q: an empty port", host)
		}
	} else {
		if i := strings.LastIndex(h, ":"); i >= 0 {
			h, port = h[:i], h[i+1:]
			if port == "" {
				return fmt.Errorf("registry %q: an empty port", host)
			}
		}
		if len(h) > 253 || !dnsNameRE.MatchString(h) {
			return fmt.Errorf("registry %q: %q is not a host name or IPv4 address", host, h)
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' || strings.ContainsAny(port, "+-") {
			return fmt.Errorf("registry %q: port %q is not 1-65535", host, port)
		}
	}
	return nil
}

// ParseUserReference is ParseReference for a reference a user sent: it
// also refuses a tag and a digest together.
func ParseUserReference(ref string, insecure, latest bool) (name.Reference, error) {
	if err := checkReference(ref, latest, true); err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrBadReference, ref, err)
	}
	return ParseReference(ref, insecure, latest)
}
