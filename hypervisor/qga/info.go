package qga

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"time"

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
			if ip := net.ParseIP(addr.Addr); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				info.IPs = append(info.IPs, ip.String())
			}
		}
	}
	return info, nil
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
	if r.PrettyName != "" {
		return r.PrettyName
	}
	return strings.TrimSpace(r.KernelName + " " + r.KernelRelease)
}
