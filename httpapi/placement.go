package httpapi

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// Node port ranges the leader allocates VM ports from.
const (
	vncPortMin, vncPortMax         = 5900, 6899
	forwardPortMin, forwardPortMax = 20000, 29999
)

// schedulerNodes turns the replica's nodes into the scheduler's view.
func (s *Server) schedulerNodes() []scheduler.Node {
	views := s.b.FSM().Nodes()
	out := make([]scheduler.Node, 0, len(views))
	for _, n := range views {
		out = append(out, scheduler.Node{
			Name: n.Name, Namespace: n.Namespace, Ready: n.Phase == api.PhaseReady, Arch: n.Arch, Tags: n.Tags,
			TotalCPU: n.Capacity.CPU, FreeCPU: n.Capacity.CPU - n.Used.CPU,
			TotalMemory: n.Capacity.MemoryBytes, FreeMemory: n.Capacity.MemoryBytes - n.Used.MemoryBytes,
			TotalGPU: n.Capacity.GPU, FreeGPU: n.Capacity.GPU - n.Used.GPU,
			UsedPorts: s.b.FSM().PortsInUse(n.Name),
		})
	}
	return out
}

// allocatePorts picks the lowest free VNC port and two forward ports (SSH,
// screen sharing) on a node, avoiding used and reserved ports.
func allocatePorts(used map[int]bool, reserved []raftfsm.PortMap) (vnc, ssh, screen int, err error) {
	taken := map[int]bool{}
	for p := range used {
		taken[p] = true
	}
	for _, r := range reserved {
		taken[r.Host] = true
	}
	next := func(lo, hi int) int {
		for p := lo; p <= hi; p++ {
			if !taken[p] {
				taken[p] = true
				return p
			}
		}
		return 0
	}
	vnc, ssh, screen = next(vncPortMin, vncPortMax), next(forwardPortMin, forwardPortMax), next(forwardPortMin, forwardPortMax)
	if vnc == 0 || ssh == 0 || screen == 0 {
		return 0, 0, 0, fmt.Errorf("%w: the node has no free VM ports", raftfsm.ErrNoRoom)
	}
	return vnc, ssh, screen, nil
}

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
		if (h >= vncPortMin && h <= vncPortMax) || (h >= forwardPortMin && h <= forwardPortMax) {
			return nil, fmt.Errorf("node port %d is in a range svc allocates itself (%d-%d, %d-%d)", h, vncPortMin, vncPortMax, forwardPortMin, forwardPortMax)
		}
		seen[h] = true
		out = append(out, raftfsm.PortMap{Host: h, Guest: g})
	}
	return out, nil
}

func formatReservedPorts(ps []raftfsm.PortMap) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.Itoa(p.Host) + ":" + strconv.Itoa(p.Guest)
	}
	return strings.Join(parts, ",")
}

// vmToAPI converts a VM of the replicated state to its API record. A VM on a
// node that is NOT READY shows status Unknown.
func (s *Server) vmToAPI(vm raftfsm.VM) api.VM {
	status := vm.Status
	if n, ok := s.b.FSM().Node(vm.Node); !ok || n.Phase != api.PhaseReady {
		status = api.StatusUnknown
	}
	meta := vm.CustomMetadata
	if meta == nil {
		meta = map[string]string{}
	}
	return api.VM{
		Name: vm.Name, Node: vm.Node, Memory: api.FormatGi(vm.MemoryBytes), IP: vm.IP,
		SSH: vm.SSHPort, VNC: vm.VNCPort, VNCPassword: vm.VNCPassword, Screenshare: vm.ScreensharePort, Status: status,
		CPU: vm.CPU, DeployDate: vm.CreatedAt, Image: vm.Image, GPUPassthrough: vm.GPUPassthrough,
		VMConfig: vm.VMConfig, CustomMetadata: meta, Type: vm.Arch, Namespace: vm.Namespace,
		Owner: vm.Owner, ErrorMessage: vm.ErrorMessage, ReservedPorts: formatReservedPorts(vm.ReservedPorts),
		LegacyIO: vm.LegacyIO, ISO: vm.ISO, PortWarnings: []string{},
	}
}

func vmConfigToAPI(c raftfsm.VMConfig) api.VMConfig {
	created := c.CreatedAt
	return api.VMConfig{
		Name: c.Name, Image: c.Image, CPU: c.CPU, Memory: c.MemoryGiB, Scheduler: c.Scheduler,
		Tag: c.Tag, TagRequired: c.TagRequired, Node: c.Node, GPUPassthrough: c.GPUPassthrough,
		ISO: c.ISO, NetBoost: c.NetBoost, LegacyIO: c.LegacyIO, DisplayWidth: c.Display.Width,
		DisplayHeight: c.Display.Height, DisplayDPI: c.Display.DPI, CustomMetadata: c.CustomMetadata,
		Owner: c.Owner, CreatedAt: &created,
	}
}

func imageToAPI(img raftfsm.Image) api.Image {
	return api.Image{
		Name: img.Name, Description: img.Description, Type: img.Arch, Size: api.FormatSize(img.VirtualSize),
		SpaceUsed: api.FormatSize(img.SizeBytes), Digest: img.Digest, SourceType: img.SourceType,
		Source: img.Source, State: "Ready", Owner: img.Owner, CreatedAt: img.CreatedAt,
	}
}
