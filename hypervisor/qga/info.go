package qga

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"
	"unicode"

	"github.com/svc-project/svc/hypervisor"
)

// SetTime sets the guest's clock to the host's (guest-set-time: the
// system clock, then the hardware clock).
func (a Agent) SetTime(ctx context.Context) error {
	if err := a.Call(ctx, map[string]any{"execute": "guest-set-time", "arguments": map[string]int64{"time": time.Now().UnixNano()}}, nil); err != nil {
		return fmt.Errorf("set the clock of %s: %w", a.Name, err)
	}
	return nil
}

// Info asks what the guest is (guest-get-osinfo) and where it is reached
// (guest-network-get-interfaces: its addresses but loopback and
// link-local ones).
func (a Agent) Info(ctx context.Context) (hypervisor.GuestInfo, error) {
	var osinfo json.RawMessage
	if err := a.Call(ctx, map[string]string{"execute": "guest-get-osinfo"}, &osinfo); err != nil {
		return hypervisor.GuestInfo{}, err
	}
	info := hypervisor.GuestInfo{OS: OSName(osinfo)}
	var ifaces []struct {
		Addrs []struct {
			Addr string `json:"ip-address"`
		} `json:"ip-addresses"`
	}
	if err := a.Call(ctx, map[string]string{"execute": "guest-network-get-interfaces"}, &ifaces); err != nil {
		return info, err
	}
	for _, iface := range ifaces {
		for _, addr := range iface.Addrs {
			if len(info.IPs) == maxIPs {
				return info, nil
			}
			if ip := net.ParseIP(addr.Addr); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				info.IPs = append(info.IPs, ip.String())
			}
		}
	}
	return info, nil
}

// maxIPs bounds the addresses kept of a guest's report; maxOSName the
// characters of its name.
const (
	maxIPs    = 32
	maxOSName = 128
)

// printable is s with what a terminal would take for a control (and
// invalid UTF-8) dropped, at most n characters: what a guest reports is
// shown to users.
func printable(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "") {
		if n == 0 {
			break
		}
		if unicode.IsPrint(r) {
			b.WriteRune(r)
			n--
		}
	}
	return strings.TrimSpace(b.String())
}

// OSName reads guest-get-osinfo's return: the os-release name, else the
// kernel's name and release.
func OSName(ret []byte) string {
	var r struct {
		PrettyName    string `json:"pretty-name"`
		KernelName    string `json:"kernel-name"`
		KernelRelease string `json:"kernel-release"`
	}
	if json.Unmarshal(ret, &r) != nil {
		return ""
	}
	if name := printable(r.PrettyName, maxOSName); name != "" {
		return name
	}
	return printable(r.KernelName+" "+r.KernelRelease, maxOSName)
}
