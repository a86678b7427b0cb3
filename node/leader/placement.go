package leader

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/raftfsm"
	"github.com/svc-project/svc/scheduler"
)

// placer places VMs on the leader. Placements take turns (a few
// milliseconds each), so that concurrent deploys do not pick the same room
// and ports; Apply still checks both. Ports are handed out round the range
// from where the last placement on a node stopped, not lowest first: a
// port a deleted VM freed a moment ago may still be held by its QEMU,
// which its host is taking down, and a new VM on it would wait for that.
type placer struct {
	mu   sync.Mutex
	next map[string]int // node -> where its next VNC port search starts (forward ports follow)
	// nodes is the scheduler's view, reused from placement to placement
	// (a cluster of 10,000 nodes makes it megabytes).
	nodes []scheduler.Node
}

// placeAttempts bounds how often a VM that lost its room or its generated
// name to a concurrent placement (a leader change) is placed again.
const placeAttempts = 8

// Place chooses a node for p (the scheduler), its ports, its VNC password and
// its name when p asks for one, and records the VM through Raft. It runs on
// the leader; a refusal is a rule error (no node fits: Conflict).
func (l *Leader) Place(ctx context.Context, pl scheduler.Placement) (raftfsm.VM, error) {
	l.placer.mu.Lock()
	defer l.placer.mu.Unlock()
	req := pl.Request()
	var lastErr error
	for range placeAttempts {
		vm := pl.VM
		if pl.NamePrefix != "" {
			vm.Name = api.GenerateName(pl.NamePrefix)
		}
		node, err := scheduler.Place(l.schedulerNodes(pl.VM, req), req)
		if err != nil {
			return vm, raftfsm.NewRuleError(raftfsm.ErrConflict, err.Error())
		}
		n, _ := l.cfg.FSM.Node(node)
		vm.Node, vm.IP, vm.Arch = node, n.Addr, n.Arch
		if l.placer.next == nil {
			l.placer.next = map[string]int{}
		}
		vm.VNCPort, vm.SSHPort, vm.ScreensharePort, err = allocatePorts(l.cfg.FSM.PortsInUse(node), vm.ReservedPorts, l.placer.next[node])
		if err == nil {
			l.placer.next[node]++
		}
		if err != nil {
			lastErr = err
			continue
		}
		vm.CreatedAt = time.Now().UTC().Truncate(time.Second)
		if vm.TTLSeconds > 0 {
			at := vm.CreatedAt.Add(time.Duration(vm.TTLSeconds) * time.Second)
			vm.ExpiresAt = &at
		}
		vm.VNCPassword = randomString(vncPasswordAlphabet, 8)
		v, err := l.cfg.Raft.ApplyCommand(ctx, raftfsm.TypeVMCreate, raftfsm.VMCreate{VM: vm})
		switch {
		case err == nil:
			if created, ok := v.(*raftfsm.VM); ok {
				return *created, nil // with its UID
			}
			return vm, nil
		case errors.Is(err, raftfsm.ErrNoRoom), pl.NamePrefix != "" && errors.Is(err, raftfsm.ErrAlreadyExists):
			lastErr = err
			continue
		}
		return vm, err
	}
	return pl.VM, raftfsm.NewRuleError(raftfsm.ErrConflict, fmt.Sprintf("could not place the VM after %d attempts: %v", placeAttempts, lastErr))
}

// schedulerNodes turns the replica's nodes into the scheduler's view for
// placing vm (as req): with what each holds ready for it (its image, a
// booted template of its shape). It reads the nodes in place (no copy of
// the state); tags are kept only when the request names one, ports and
// macOS VMs looked up only when the scheduler checks them (reserved host
// ports, a macOS guest): on a large cluster they are most of a
// placement's cost.
func (l *Leader) schedulerNodes(vm raftfsm.VM, req scheduler.Request) []scheduler.Node {
	holders := map[string]bool{}
	if b, ok := l.cfg.FSM.Blob(vm.ImageDigest); ok {
		for _, h := range b.Holders {
			holders[h] = true
		}
	}
	template := ""
	if sh, ok := vm.Shape(); ok {
		template = sh.Key()
	}
	out := l.placer.nodes[:0] // under l.placer.mu
	var own []map[int]bool
	ports, macOS := len(req.HostPorts) > 0, req.MacOS
	l.cfg.FSM.EachNode(func(n *raftfsm.Node, used raftfsm.Usage) {
		sn := scheduler.Node{
			Name: n.Name, Namespace: n.Namespace, Ready: n.Phase == api.PhaseReady, Cordoned: n.Cordoned, Arch: n.Arch,
			Hypervisor: n.Hypervisor,
			TotalCPU:   n.Capacity.CPU, FreeCPU: n.Capacity.CPU - used.CPU,
			TotalMemory: n.Capacity.MemoryBytes, FreeMemory: n.Capacity.MemoryBytes - used.MemoryBytes,
			TotalGPU: n.Capacity.GPU, FreeGPU: n.Capacity.GPU - used.GPU,
			HasImage: holders[n.Name], HasTemplate: template != "" && n.HasTemplate(template),
		}
		if req.Tag != "" {
			sn.Tags = slices.Clone(n.Tags)
		}
		if ports {
			own = append(own, n.OwnPorts())
		}
		out = append(out, sn)
	})
	for i := range out {
		if ports {
			out[i].UsedPorts = usedPorts(l.cfg.FSM.PortsInUse(out[i].Name), own[i])
		}
		if macOS {
			out[i].MacOSVMs = l.macOSVMs(out[i].Name)
		}
	}
	l.placer.nodes = out
	return out
}

// macOSVMs counts the macOS VMs placed on a node.
func (l *Leader) macOSVMs(node string) int {
	n := 0
	for _, vm := range l.cfg.FSM.VMsOnNode(node) {
		if vm.OS == raftfsm.OSMacOS {
			n++
		}
	}
	return n
}

// usedPorts are the ports of a node that no VM may take: its VMs' and its
// peer's own.
func usedPorts(vms, own map[int]bool) map[int]bool {
	for port := range own {
		vms[port] = true
	}
	return vms
}

// allocatePorts picks a free VNC port and two forward ports (SSH, screen
// sharing) on a node, avoiding used and reserved ports: the first free
// ones from the turn-th port of each range on, round the range.
func allocatePorts(used map[int]bool, reserved []raftfsm.PortMap, turn int) (vnc, ssh, screen int, err error) {
	taken := map[int]bool{}
	for port := range used {
		taken[port] = true
	}
	for _, r := range reserved {
		taken[r.Host] = true
	}
	next := func(lo, hi, from int) int {
		n := hi - lo + 1
		for i := range n {
			port := lo + (from+i)%n
			if !taken[port] {
				taken[port] = true
				return port
			}
		}
		return 0
	}
	vnc = next(api.VNCPortMin, api.VNCPortMax, turn)
	ssh, screen = next(api.ForwardPortMin, api.ForwardPortMax, 2*turn), next(api.ForwardPortMin, api.ForwardPortMax, 2*turn+1)
	if vnc == 0 || ssh == 0 || screen == 0 {
		return 0, 0, 0, fmt.Errorf("%w: the node has no free VM ports", raftfsm.ErrNoRoom)
	}
	return vnc, ssh, screen, nil
}

const (
	// vncPasswordAlphabet makes VNC passwords: VNC authentication uses 8
	// characters, so each carries as much as a typable character can.
	vncPasswordAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
)

// randomString returns n random characters of alphabet.
func randomString(alphabet string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
