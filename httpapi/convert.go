package httpapi

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/node/runnerpool"
	"github.com/svc-project/svc/raftfsm"
)

// The records of the replicated state as the API shows them.

// nodeToAPI converts a node of the replicated state to its API record.
func nodeToAPI(n raftfsm.NodeView) api.Node {
	avail := func(total, used int) int { return max(total-used, 0) }
	var templateBytes int64
	for _, t := range n.Templates {
		templateBytes += t.SizeBytes
	}
	return api.Node{
		Templates:         len(n.Templates),
		TemplateBytes:     templateBytes,
		Name:              n.Name,
		Namespace:         n.Namespace,
		NodeIP:            n.Addr,
		AvailableCPU:      avail(n.Capacity.CPU, n.Used.CPU),
		AvailableMemory:   FormatDecimalG(max(n.Capacity.MemoryBytes-n.Used.MemoryBytes, 0)),
		AvailableGPU:      avail(n.Capacity.GPU, n.Used.GPU),
		AllocatableCPU:    n.Capacity.CPU,
		AllocatableMemory: FormatDecimalG(n.Capacity.MemoryBytes),
		AllocatableGPU:    n.Capacity.GPU,
		NodeType:          api.NodeTypeWorker,
		Phase:             n.Phase,
		Schedulable:       !n.Cordoned,
		PhaseReason:       n.PhaseReason,
		Tags:              append([]string{}, n.Tags...),
		Arch:              n.Arch,
		Hypervisor:        n.Hypervisor,
		CPUOvercommit:     max(n.CPUOvercommit, 1),
		CachedImages:      []string{},
		SharedStorage:     nodeSharedStorage(n),
	}
}

// nodeSharedStorage is a node's shared storage as answers show it: the
// usage by namespace, sorted.
func nodeSharedStorage(n raftfsm.NodeView) api.NodeSharedStorage {
	out := api.NodeSharedStorage{Offered: n.SharedStorage, Reason: n.SharedStorageWhy, Usage: []api.SharedUsage{}}
	for _, ns := range slices.Sorted(maps.Keys(n.SharedUsage)) {
		out.Usage = append(out.Usage, api.SharedUsage{Namespace: ns, UsedBytes: n.SharedUsage[ns]})
	}
	return out
}

// FormatDecimalG formats bytes as decimal gigabytes with two decimals ("128.00G").
func FormatDecimalG(bytes int64) string {
	return fmt.Sprintf("%.2fG", float64(bytes)/1e9)
}

func (s *core) namespaceToAPI(ns raftfsm.Namespace) api.Namespace {
	created := ns.CreatedAt
	q := s.namespaceQuota(ns)
	out := api.Namespace{Name: ns.Name, CreatedAt: &created, Quota: q.Quota, Used: &q.Used}
	if ss := ns.SharedStorage; ss != nil {
		out.SharedStorage = &api.SharedStorage{MaxBytes: ss.MaxBytes}
	}
	if a := s.alias(); a != "" && ns.Name == api.DefaultNamespace {
		out.Aliases = []string{a}
	}
	return out
}

// vmToAPI converts a VM of the replicated state to its API record. A VM on a
// node that is NOT READY shows status Unknown.
func (s *core) vmToAPI(vm raftfsm.VM) api.VM {
	status := vm.Status
	if ready, _ := s.replica.FSM().NodeReady(vm.Node); !ready {
		status = api.StatusUnknown
	}
	meta := vm.CustomMetadata
	if meta == nil {
		meta = map[string]string{}
	}
	out := api.VM{
		Name: vm.Name, UID: vm.UID, Node: vm.Node, Memory: api.FormatGi(vm.MemoryBytes), IP: vm.IP,
		SSH: vm.SSHPort, VNC: vm.VNCPort, VNCPassword: vm.VNCPassword, Screenshare: vm.ScreensharePort, Status: status,
		CPU: vm.CPU, DeployDate: vm.CreatedAt, Image: vm.Image, GPUPassthrough: vm.GPUPassthrough,
		VMConfig: vm.VMConfig, CustomMetadata: meta, Type: vm.Arch, Namespace: vm.Namespace,
		Owner: vm.Owner, ErrorMessage: vm.ErrorMessage, ReservedPorts: formatReservedPorts(vm.ReservedPorts),
		LegacyIO: vm.LegacyIO, SharedStorage: vm.SharedStorage, ISO: vm.ISO, PortWarnings: []string{}, StartedFrom: vm.StartedFrom, GuestIPs: []string{},
		DiskBytes: vm.DiskBytes, ExpiresAt: vm.ExpiresAt,
	}
	if meta[runnerpool.MetaPool] != "" {
		// A pool's VM opens to no one's VNC client: an admin uses the
		// console route (poolvms.go).
		out.VNCPassword = ""
	}
	if g := vm.Guest; g != nil && g.Agent {
		out.GuestAgent, out.GuestOS, out.GuestIPs = true, g.OS, append([]string{}, g.IPs...)
	}
	if id := vm.Identity; id != nil {
		out.Identity = &api.GuestIdentity{State: id.State, Message: id.Message}
	}
	return out
}

// vmConfigToAPI is a config as answers show it: with the nodes where its
// booted template is ready.
func (s *core) vmConfigToAPI(c raftfsm.VMConfig) api.VMConfig {
	created := c.CreatedAt
	warmNodes := []string{}
	var hotNodes map[string]int
	if sh, ok := s.replica.FSM().WarmShape(c); ok {
		warmNodes = s.replica.FSM().WarmNodes(sh.Key())
		if c.Hot > 0 {
			hotNodes = s.replica.FSM().HotNodes(sh.Key())
		}
	}
	return api.VMConfig{
		Warm: c.Warm, WarmNodes: warmNodes, Hot: c.Hot, HotNodes: hotNodes,
		Name: c.Name, Image: c.Image, CPU: c.CPU, Memory: c.MemoryGiB, Scheduler: c.Scheduler,
		Tag: c.Tag, TagRequired: c.TagRequired, Node: c.Node, GPUPassthrough: c.GPUPassthrough,
		ISO: c.ISO, NetBoost: c.NetBoost, LegacyIO: c.LegacyIO, SharedStorage: c.SharedStorage, DisplayWidth: c.Display.Width,
		DisplayHeight: c.Display.Height, DisplayDPI: c.Display.DPI, CustomMetadata: c.CustomMetadata,
		Owner: c.Owner, CreatedAt: &created, TTL: formatTTL(c.TTLSeconds),
	}
}

// formatTTL writes a time-to-live as a duration ("2h0m0s"; "" for none).
func formatTTL(seconds int64) string {
	if seconds <= 0 {
		return ""
	}
	return (time.Duration(seconds) * time.Second).String()
}

func imageToAPI(img raftfsm.Image) api.Image {
	return api.Image{
		Name: img.Name, Description: img.Description, Type: img.Arch, Size: api.FormatSize(img.VirtualSize),
		SpaceUsed: api.FormatSize(img.SizeBytes), Digest: img.Digest, SourceType: img.SourceType,
		Source: img.Source, State: stateOf(img), ErrorMessage: img.ErrorMessage, Owner: img.Owner, CreatedAt: img.CreatedAt,
	}
}

func isoToAPI(img raftfsm.Image) api.ISO {
	return api.ISO{
		Name: img.Name, Description: img.Description, Size: api.FormatSize(img.SizeBytes),
		SpaceUsed: api.FormatSize(img.SizeBytes), Digest: img.Digest, SourceType: img.SourceType,
		Source: img.Source, State: stateOf(img), ErrorMessage: img.ErrorMessage, Owner: img.Owner, CreatedAt: img.CreatedAt,
	}
}

// stateOf is a record's state; records from before states are Ready.
func stateOf(img raftfsm.Image) string {
	if img.State == "" {
		return api.ImageReady
	}
	return img.State
}

func formatReservedPorts(ps []raftfsm.PortMap) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.Itoa(p.Host) + ":" + strconv.Itoa(p.Guest)
	}
	return strings.Join(parts, ",")
}
