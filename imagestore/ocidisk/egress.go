package ocidisk

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"time"
)

// Egress is the registries a peer may contact. Public addresses are
// allowed; private, shared (CGNAT), loopback, link-local (cloud metadata
// services among them), multicast and reserved addresses only where Allow
// lists them. A host name is checked by what it resolves to, when a
// request is made and again when each connection is dialled (so that a name
// that resolves to an allowed address first and a private one later gains
// nothing), unless Allow names the host itself.
type Egress struct {
	// Prefixes are the addresses allowed beyond the public ones.
	Prefixes []netip.Prefix
	// Hosts are host names allowed whatever they resolve to (lowercase, no
	// port).
	Hosts []string
}

// ParseEgress reads the allow list of the agent's --registry-allow: CIDRs
// ("10.0.0.0/8"), addresses ("10.1.2.3", taken as one address) and host
// names ("registry.internal").
func ParseEgress(allow []string) (Egress, error) {
	var e Egress
	for _, a := range allow {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case strings.Contains(a, "/"):
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return Egress{}, fmt.Errorf("registry allow list: %q is not a CIDR: %w", a, err)
			}
			e.Prefixes = append(e.Prefixes, p.Masked())
		default:
			if ip, err := netip.ParseAddr(a); err == nil {
				e.Prefixes = append(e.Prefixes, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
				continue
			}
			if !dnsNameRE.MatchString(a) {
				return Egress{}, fmt.Errorf("registry allow list: %q is neither a CIDR, an address nor a host name", a)
			}
			e.Hosts = append(e.Hosts, strings.ToLower(a))
		}
	}
	return e, nil
}

// notPublic are the ranges netip's predicates leave out: shared address
// space (CGNAT), "this network" and the reserved class E.
var notPublic = []netip.Prefix{
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// allowedAddr reports whether ip may be contacted.
func (e *Egress) allowedAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range e.Prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return false
	}
	for _, p := range notPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// resolveTimeout bounds a registry host's name lookup.
const resolveTimeout = 5 * time.Second

// allowedAddrs returns the addresses of host this peer may dial: all of
// them for a host Allow names, else those the policy allows. A host with
// any address the policy refuses is refused whole.
func (e *Egress) allowedAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	host = strings.ToLower(strings.Trim(host, "[]"))
	refused := fmt.Errorf("registry %s: %w: only public addresses and those the agent's --registry-allow lists may be reached", host, ErrUnreachable)
	if ip, err := netip.ParseAddr(host); err == nil {
		if !e.allowedAddr(ip) {
			return nil, refused
		}
		return []netip.Addr{ip}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("registry %s: %w", host, errNoAnswer)
	}
	for _, h := range e.Hosts {
		if h == host {
			return ips, nil
		}
	}
	for _, ip := range ips {
		if !e.allowedAddr(ip) {
			return nil, refused
		}
	}
	return ips, nil
}

// CheckRegistry refuses a registry (host[:port]) the policy does not allow,
// before any connection is made: a refusal wraps ErrUnreachable.
func (e *Egress) CheckRegistry(ctx context.Context, registry string) error {
	if e == nil {
		return nil
	}
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	_, err := e.allowedAddrs(ctx, host)
	return err
}

// Dialer dials only addresses the policy allows: registries, and the
// OpenID Connect issuers people sign in with, are reached through it.
func (e *Egress) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	d.Timeout, d.KeepAlive = 30*time.Second, 30*time.Second
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		ips, err := e.allowedAddrs(ctx, host)
		if err != nil {
			return nil, err
		}
		var errs []error
		for _, ip := range ips {
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
		}
		return nil, errors.Join(errs...)
	}
}

// errNoAnswer stands for every network failure on the way to a registry:
// its message says no more, so that a job's message or a deploy's answer
// does not tell a refused port from a closed one, or a server that is not
// a registry, on an address a user chose.
var errNoAnswer = errors.New("no registry answered at that address (it refused or dropped the connection, did not answer in time, spoke no HTTPS, or its name did not resolve)")

// networkFailure reports whether err is a failure below HTTP: a dial, a
// name lookup, a TLS handshake, a connection cut or an HTTP answer to an
// HTTPS request.
func networkFailure(err error) bool {
	var oe *net.OpError
	var de *net.DNSError
	var rh tls.RecordHeaderError
	return errors.As(err, &oe) || errors.As(err, &de) || errors.As(err, &rh) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, errNoAnswer) ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// untrusted reports whether err is a registry's TLS certificate that does
// not verify: the user can do something about that (allowInsecure).
func untrusted(err error) bool {
	var ce *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &ce) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}
