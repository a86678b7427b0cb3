package leader

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// view is the scheduler's index of the nodes, brought up to date at
	// each placement with the nodes the replica changed since mark.
	view *scheduler.View
	mark uint64
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
		node, err := l.schedule(pl.VM, req)
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
		case errors.Is(err, raftfsm.ErrNoRoom):
			// The view and the replica disagreed (a change the view missed
			// would be a defect): read every node again.
			l.placer.mark = 0
			lastErr = err
			continue
		case pl.NamePrefix != "" && errors.Is(err, raftfsm.ErrAlreadyExists):
			lastErr = err
			continue
		}
		return vm, err
	}
	return pl.VM, raftfsm.NewRuleError(raftfsm.ErrConflict, fmt.Sprintf("could not place the VM after %d attempts: %v", placeAttempts, lastErr))
}

// schedule runs the scheduler for vm (as req) over the view, brought up to
// date first, with what the nodes hold ready for it (its image, a booted
// template of its shape).
func (l *Leader) schedule(vm raftfsm.VM, req scheduler.Request) (string, error) {
	l.refreshView()
	// A registry's claim of a digest its namespace cannot read places the
	// VM as if no peer held it (its host pulls it whole).
	b, held := l.cfg.FSM.Blob(vm.ImageDigest)
	if held && (vm.ImageSource == "" || l.cfg.FSM.NamespaceHolds(vm.Namespace, vm.ImageDigest)) {
		req.ImageHolders = b.Holders
	}
	// An image only hosts that are no peers any more hold (a cluster formed
	// from a snapshot after its hosts were lost, or peers removed) cannot be
	// fetched: say so now, rather than let the VM wait out its deploy for a
	// peer that never comes. A holder that is a peer but down may come back.
	if held && vm.ImageSource == "" && len(b.Holders) > 0 && !l.anyMayServe(b.Holders) {
		return "", raftfsm.NewRuleError(raftfsm.ErrConflict, fmt.Sprintf(
			"image %s: no running peer holds its disk (%s held it and are no peers of this cluster now); upload the image again or pull it from a registry",
			vm.Image, strings.Join(b.Holders, ", ")))
	}
	if sh, ok := vm.Shape(); ok {
		req.Template = sh.Key()
	}
	return l.placer.view.Place(req, placeFacts{l})
}

// anyMayServe says whether one of the nodes named is READY or an admitted
// peer (one that is down may come back).
func (l *Leader) anyMayServe(names []string) bool {
	for _, n := range names {
		if nv, ok := l.cfg.FSM.Node(n); ok && nv.Ready() {
			return true
		}
		if _, ok := l.cfg.FSM.PeerIdentity(n); ok {
			return true
		}
	}
	return false
}

// refreshView brings the view up to date with the replica: the nodes
// changed since the last placement, or every node when the replica cannot
// say which (under l.placer.mu).
func (l *Leader) refreshView() {
	p := &l.placer
	var changed []scheduler.Node
	mark, all := l.cfg.FSM.NodesSince(p.mark, func(n *raftfsm.Node, used raftfsm.Usage) {
		changed = append(changed, schedulerNode(n, used))
	})
	if all || p.view == nil {
		p.view = scheduler.NewView()
	}
	for _, n := range changed {
		p.view.Set(n)
	}
	p.mark = mark
}

// schedulerNode is what the scheduler knows of n: copies of everything it
// keeps (n belongs to the replica).
func schedulerNode(n *raftfsm.Node, used raftfsm.Usage) scheduler.Node {
	sn := scheduler.Node{
		Name: n.Name, Namespace: n.Namespace, Ready: n.Ready(), Cordoned: n.Cordoned, Arch: n.Arch,
		Hypervisor: n.Hypervisor,
		TotalCPU:   n.Capacity.CPU, FreeCPU: n.Capacity.CPU - used.CPU,
		TotalMemory: n.Capacity.MemoryBytes, FreeMemory: n.Capacity.MemoryBytes - used.MemoryBytes,
		TotalGPU: n.Capacity.GPU, FreeGPU: n.Capacity.GPU - used.GPU,
		Tags:          slices.Clone(n.Tags),
		SharedStorage: n.SharedStorage, SharedStorageWhy: n.SharedStorageWhy,
		DiskRoom: n.DiskRoom, DiskRoomKnown: n.DiskRoomKnown,
	}
	for _, t := range n.Templates {
		sn.Templates = append(sn.Templates, t.Key)
	}
	for _, g := range n.Hot {
		if !slices.Contains(sn.Hot, g.Key) {
			sn.Hot = append(sn.Hot, g.Key)
		}
	}
	return sn
}

// placeFacts gives the scheduler the ports and macOS VMs of the nodes it
// checks them on (requests reserving host ports, macOS guests).
type placeFacts struct{ l *Leader }

// UsedPorts are the ports of a node that no VM may take: its VMs' and its
// peer's own.
func (f placeFacts) UsedPorts(node string) map[int]bool {
	used := f.l.cfg.FSM.PortsInUse(node)
	if n, ok := f.l.cfg.FSM.Node(node); ok {
		for port := range n.OwnPorts() {
			used[port] = true
		}
	}
	return used
}

func (f placeFacts) MacOSVMs(node string) int { return f.l.macOSVMs(node) }

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
