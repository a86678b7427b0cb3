package deploy

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
)

// parseReservedPorts reads "8080:80,2222:22" (node:guest).
func parseReservedPorts(s string) ([]raftfsm.PortMap, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > api.MaxReservedPorts {
		return nil, fmt.Errorf("%d pairs, at most %d", len(parts), api.MaxReservedPorts)
	}
	var out []raftfsm.PortMap
	seen := map[int]bool{}
	for _, part := range parts {
		host, guest, ok := strings.Cut(strings.TrimSpace(part), ":")
		h, err1 := strconv.Atoi(host)
		g, err2 := strconv.Atoi(guest)
		if !ok || err1 != nil || err2 != nil || h < 1 || h > 65535 || g < 1 || g > 65535 {
			return nil, fmt.Errorf("%q is not node:guest with ports 1-65535 (e.g. \"8080:80,2222:22\")", part)
		}
		if seen[h] {
			return nil, fmt.Errorf("node port %d is given twice", h)
		}
		if h < api.MinNodePort {
			return nil, fmt.Errorf("node port %d is a privileged port of the host; use %d-65535", h, api.MinNodePort)
		}
		if (h >= api.VNCPortMin && h <= api.VNCPortMax) || (h >= api.ForwardPortMin && h <= api.ForwardPortMax) {
			return nil, fmt.Errorf("node port %d is in a range svc allocates itself (%d-%d, %d-%d)", h, api.VNCPortMin, api.VNCPortMax, api.ForwardPortMin, api.ForwardPortMax)
		}
		seen[h] = true
		out = append(out, raftfsm.PortMap{Host: h, Guest: g})
	}
	return out, nil
}
