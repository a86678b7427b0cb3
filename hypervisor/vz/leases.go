package vz

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// LeasesFile is where macOS's DHCP server (bootpd) records the addresses it
// gave, the guests of the shared NAT network among them.
const LeasesFile = "/var/db/dhcpd_leases"

// Bounds of a leases file read.
const (
	maxLeaseLine   = 4096
	maxLeaseFields = 64
	maxLeases      = 1 << 16
)

// Lease is one entry of the leases file.
type Lease struct {
	Name string
	IP   netip.Addr
	MAC  net.HardwareAddr
	// Expiry is when the lease ends.
	Expiry time.Time
}

// ErrLeases is wrapped by every error of a leases file that is not
// written as bootpd writes it.
var ErrLeases = errors.New("not a DHCP leases file")

// ParseLeases reads a leases file: entries between "{" and "}" lines, one
// key=value a line. An entry without a valid address or hardware address
// is an error; unknown keys are skipped.
func ParseLeases(r io.Reader) ([]Lease, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), maxLeaseLine)
	var out []Lease
	var cur map[string]string
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "":
		case text == "{":
			if cur != nil {
				return nil, fmt.Errorf("%w: line %d: an entry inside an entry", ErrLeases, line)
			}
			cur = map[string]string{}
		case text == "}":
			if cur == nil {
				return nil, fmt.Errorf("%w: line %d: an entry ends that did not begin", ErrLeases, line)
			}
			l, err := leaseOf(cur)
			if err != nil {
				return nil, fmt.Errorf("%w: the entry ending on line %d: %v", ErrLeases, line, err)
			}
			if len(out) == maxLeases {
				return nil, fmt.Errorf("%w: over %d entries", ErrLeases, maxLeases)
			}
			out, cur = append(out, l), nil
		default:
			k, v, ok := strings.Cut(text, "=")
			if cur == nil || !ok {
				return nil, fmt.Errorf("%w: line %d: %q", ErrLeases, line, text)
			}
			if len(cur) == maxLeaseFields {
				return nil, fmt.Errorf("%w: line %d: over %d fields in an entry", ErrLeases, line, maxLeaseFields)
			}
			cur[k] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrLeases, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%w: the last entry does not end", ErrLeases)
	}
	return out, nil
}

func leaseOf(f map[string]string) (Lease, error) {
	ip, err := netip.ParseAddr(f["ip_address"])
	if err != nil {
		return Lease{}, fmt.Errorf("ip_address: %w", err)
	}
	mac, err := parseHW(f["hw_address"])
	if err != nil {
		return Lease{}, fmt.Errorf("hw_address: %w", err)
	}
	l := Lease{Name: f["name"], IP: ip, MAC: mac}
	if s, ok := strings.CutPrefix(f["lease"], "0x"); ok {
		secs, err := strconv.ParseInt(s, 16, 64)
		if err != nil {
			return Lease{}, fmt.Errorf("lease: %w", err)
		}
		l.Expiry = time.Unix(secs, 0).UTC()
	}
	return l, nil
}

// parseHW reads bootpd's "1,52:54:0:ab:cd:ef": the hardware type (1,
// Ethernet), then octets in hex without their leading zeros.
func parseHW(s string) (net.HardwareAddr, error) {
	typ, addr, ok := strings.Cut(s, ",")
	if !ok || typ != "1" {
		return nil, fmt.Errorf("%q is not an Ethernet address", s)
	}
	parts := strings.Split(addr, ":")
	if len(parts) != 6 {
		return nil, fmt.Errorf("%q does not have 6 octets", s)
	}
	mac := make(net.HardwareAddr, 6)
	for i, p := range parts {
		b, err := strconv.ParseUint(p, 16, 8)
		if err != nil || p == "" || len(p) > 2 {
			return nil, fmt.Errorf("%q: octet %q", s, p)
		}
		mac[i] = byte(b)
	}
	return mac, nil
}

// IPForMAC returns the address of the newest lease (the latest expiry) of
// the hardware address mac.
func IPForMAC(leases []Lease, mac net.HardwareAddr) (netip.Addr, bool) {
	var best Lease
	found := false
	for _, l := range leases {
		if l.MAC.String() == mac.String() && (!found || l.Expiry.After(best.Expiry)) {
			best, found = l, true
		}
	}
	return best.IP, found
}
