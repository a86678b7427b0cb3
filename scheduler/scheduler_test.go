package scheduler

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

const gi = int64(1) << 30

func node(name string, freeCPU int, freeMemGi int64, mod ...func(*Node)) Node {
	n := Node{Name: name, Namespace: "ns", Ready: true, Arch: "amd64", TotalCPU: 16, FreeCPU: freeCPU,
		TotalMemory: 64 * gi, FreeMemory: freeMemGi * gi, UsedPorts: map[int]bool{}}
	for _, m := range mod {
		m(&n)
	}
	return n
}

func TestPlace_cases(t *testing.T) {
	tagged := func(tags ...string) func(*Node) { return func(n *Node) { n.Tags = tags } }
	mac := func(macVMs int) func(*Node) {
		return func(n *Node) { n.Hypervisor, n.Arch, n.MacOSVMs = HypervisorVZ, "arm64", macVMs }
	}
	intelMac := func(n *Node) { n.Hypervisor = HypervisorVZ }
	// warm nodes hold a template of the requests' shape ("tpl", below);
	// a case's holders hold its image.
	warm := func(n *Node) { n.Templates = []string{"other", "tpl"} }
	// hot nodes also hold a free hot guest of the shape.
	hot := func(n *Node) { n.Templates, n.Hot = []string{"tpl"}, []string{"tpl"} }
	cases := []struct {
		name     string
		nodes    []Node
		req      Request
		want     string
		wantErrs []string
	}{
		{name: "spreads to the emptiest", nodes: []Node{node("a", 4, 8), node("b", 12, 48), node("c", 8, 32)}, req: Request{CPU: 2, Memory: 2 * gi}, want: "b"},
		{name: "packs onto the fullest that fits", nodes: []Node{node("a", 4, 8), node("b", 12, 48), node("c", 8, 32)}, req: Request{CPU: 2, Memory: 2 * gi, Strategy: StrategyMostAllocated}, want: "a"},
		{name: "ties go to the first name", nodes: []Node{node("b", 8, 8), node("a", 8, 8)}, req: Request{CPU: 1, Memory: gi}, want: "a"},
		{name: "pinned", nodes: []Node{node("a", 8, 8), node("b", 16, 64)}, req: Request{CPU: 1, Memory: gi, Node: "a"}, want: "a"},
		{name: "pinned node full", nodes: []Node{node("a", 1, 8), node("b", 16, 64)}, req: Request{CPU: 2, Memory: gi, Node: "a"},
			wantErrs: []string{"a: not enough CPU (1 free, 2 needed)", "b: not the requested node a"}},
		{name: "tag preferred over room", nodes: []Node{node("a", 2, 4, tagged("ssd")), node("b", 16, 64)}, req: Request{CPU: 1, Memory: gi, Tag: "ssd"}, want: "a"},
		{name: "tag preferred but not required", nodes: []Node{node("a", 1, 1, tagged("ssd")), node("b", 16, 64)}, req: Request{CPU: 2, Memory: gi, Tag: "ssd"}, want: "b"},
		{name: "tag required", nodes: []Node{node("a", 1, 1, tagged("ssd")), node("b", 16, 64)}, req: Request{CPU: 2, Memory: gi, Tag: "ssd", TagRequired: true},
			wantErrs: []string{"a: not enough CPU", "b: no tag ssd"}},
		{name: "not ready is skipped", nodes: []Node{node("a", 16, 64, func(n *Node) { n.Ready = false }), node("b", 2, 2)}, req: Request{CPU: 1, Memory: gi}, want: "b"},
		{name: "memory", nodes: []Node{node("a", 16, 1)}, req: Request{CPU: 1, Memory: 2 * gi}, wantErrs: []string{"a: not enough memory (1.00Gi free, 2.00Gi needed)"}},
		{name: "gpu", nodes: []Node{node("a", 16, 64), node("b", 16, 64, func(n *Node) { n.TotalGPU, n.FreeGPU = 2, 1 })}, req: Request{CPU: 1, Memory: gi, GPU: 1}, want: "b"},
		{name: "port taken", nodes: []Node{node("a", 16, 64, func(n *Node) { n.UsedPorts[8080] = true }), node("b", 2, 2)}, req: Request{CPU: 1, Memory: gi, HostPorts: []int{8080}}, want: "b"},
		{name: "arch", nodes: []Node{node("a", 16, 64), node("b", 16, 64, func(n *Node) { n.Arch = "arm64" })}, req: Request{CPU: 1, Memory: gi, Arch: "arm64"}, want: "b"},
		{name: "macos image lands on the Apple silicon Mac", nodes: []Node{node("big-linux", 16, 64), node("intel-mac", 16, 64, intelMac), node("mac", 4, 8, mac(1))},
			req: Request{CPU: 2, Memory: 4 * gi, MacOS: true}, want: "mac"},
		{name: "macos image never on libvirt", nodes: []Node{node("linux", 16, 64, func(n *Node) { n.Arch = "arm64" })}, req: Request{CPU: 2, Memory: gi, MacOS: true},
			wantErrs: []string{"linux: a macOS image runs on Apple silicon Macs (hypervisor vz, arch arm64); this node is libvirt/arm64"}},
		{name: "third macos vm on a mac refused", nodes: []Node{node("mac", 16, 64, mac(2))}, req: Request{CPU: 2, Memory: gi, MacOS: true},
			wantErrs: []string{"mac: it runs 2 macOS VMs, the most Apple's macOS licence allows per Mac (2)"}},
		{name: "linux image on a mac of its arch", nodes: []Node{node("mac", 16, 64, mac(2)), node("linux", 4, 8)}, req: Request{CPU: 1, Memory: gi, Arch: "arm64"}, want: "mac"},
		{name: "a template's node over an emptier one", nodes: []Node{node("a", 16, 64), node("b", 2, 4, warm), node("c", 12, 48)}, req: Request{CPU: 1, Memory: gi, ImageHolders: []string{"b", "c"}}, want: "b"},
		{name: "the image's holder over an emptier node", nodes: []Node{node("a", 16, 64), node("b", 2, 4)}, req: Request{CPU: 1, Memory: gi, ImageHolders: []string{"b"}}, want: "b"},
		{name: "a full template node is passed over", nodes: []Node{node("a", 16, 64), node("b", 0, 4, warm)}, req: Request{CPU: 1, Memory: gi}, want: "a"},
		{name: "a free hot guest's node over a template's", nodes: []Node{node("a", 16, 64, warm), node("b", 2, 4, hot), node("c", 12, 48)},
			req: Request{CPU: 1, Memory: gi, ImageHolders: []string{"a", "b", "c"}}, want: "b"},
		{name: "a full hot node is passed over", nodes: []Node{node("a", 16, 64, warm), node("b", 0, 4, hot)}, req: Request{CPU: 1, Memory: gi}, want: "a"},
		{name: "the tag before the hot guest", nodes: []Node{node("a", 2, 4, tagged("ssd")), node("b", 16, 64, hot)}, req: Request{CPU: 1, Memory: gi, Tag: "ssd"}, want: "a"},
		{name: "the tag before the template", nodes: []Node{node("a", 2, 4, tagged("ssd")), node("b", 16, 64, warm)}, req: Request{CPU: 1, Memory: gi, Tag: "ssd"}, want: "a"},
		{name: "packing among template nodes", nodes: []Node{node("a", 12, 48, warm), node("b", 4, 8, warm), node("c", 2, 2)}, req: Request{CPU: 1, Memory: gi, Strategy: StrategyMostAllocated}, want: "b"},
		{name: "other namespace is invisible", nodes: []Node{node("a", 16, 64, func(n *Node) { n.Namespace = "other" })}, req: Request{CPU: 1, Memory: gi}, wantErrs: []string{`namespace "ns" has no nodes`}},
		{name: "shared storage where it is offered", nodes: []Node{node("a", 16, 64), node("b", 2, 2, func(n *Node) { n.SharedStorage = true })},
			req: Request{CPU: 1, Memory: gi, SharedStorage: true}, want: "b"},
		{name: "a disk where there is room", nodes: []Node{
			node("a", 16, 64, func(n *Node) { n.DiskRoom, n.DiskRoomKnown = gi, true }),
			node("b", 2, 2, func(n *Node) { n.DiskRoom, n.DiskRoomKnown = 8*gi, true }),
			node("c", 16, 64), // a peer that does not report its disk is not judged by it
		}, req: Request{CPU: 1, Memory: gi, Disk: 4 * gi, Node: "b"}, want: "b"},
		{name: "a disk no node has room for", nodes: []Node{node("a", 16, 64, func(n *Node) { n.DiskRoom, n.DiskRoomKnown = gi, true })},
			req: Request{CPU: 1, Memory: gi, Disk: 4 * gi}, wantErrs: []string{"a: not enough room on its disk (1.00Gi above its floor and what it has promised, 4.00Gi needed)"}},
		{name: "shared storage nowhere", nodes: []Node{node("a", 16, 64, func(n *Node) { n.SharedStorageWhy = "QEMU has no virtio-9p" })},
			req: Request{CPU: 1, Memory: gi, SharedStorage: true}, wantErrs: []string{"a: it offers no shared storage: QEMU has no virtio-9p"}},
		{name: "every reason named", nodes: []Node{node("b", 0, 64), node("a", 16, 64, func(n *Node) { n.Ready = false })}, req: Request{CPU: 1, Memory: gi},
			wantErrs: []string{"no node can take the VM: a: NOT READY; b: not enough CPU (0 free, 1 needed)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.Namespace, c.req.Template = "ns", "tpl"
			got, err := placeOver(c.nodes, c.req)
			if len(c.wantErrs) > 0 {
				var nf *NoFitError
				if !errors.As(err, &nf) {
					t.Fatalf("got %q, %v; want a NoFitError", got, err)
				}
				for _, w := range c.wantErrs {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func randomCluster(r *rand.Rand, n int) []Node {
	nodes := make([]Node, n)
	for i := range nodes {
		total := 4 + r.IntN(60)
		mem := int64(8+r.IntN(248)) * gi
		nodes[i] = Node{
			Name: fmt.Sprintf("n%05d", i), Namespace: "ns", Ready: r.IntN(10) > 0, Arch: "amd64",
			TotalCPU: total, FreeCPU: r.IntN(total + 1), TotalMemory: mem, FreeMemory: r.Int64N(mem + 1),
			TotalGPU: 2, FreeGPU: r.IntN(3), UsedPorts: map[int]bool{},
		}
		if r.IntN(4) == 0 {
			nodes[i].Tags = []string{"ssd"}
		}
		if r.IntN(3) > 0 {
			nodes[i].SharedStorage = true
		}
	}
	return nodes
}

func randomRequest(r *rand.Rand) Request {
	req := Request{Namespace: "ns", CPU: 1 + r.IntN(16), Memory: int64(1+r.IntN(64)) * gi, GPU: r.IntN(2)}
	if r.IntN(3) == 0 {
		req.Strategy = StrategyMostAllocated
	}
	return req
}

// A placement always fits, and it is the best node by the strategy: no other
// node that fits has more room (default) or less room (most-allocated).
func TestPlace_property_fits_and_orders(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		nodes := randomCluster(r, 1+r.IntN(40))
		req := randomRequest(r)
		got, err := placeOver(nodes, req)
		var chosen *Node
		for j := range nodes {
			if nodes[j].Name == got {
				chosen = &nodes[j]
			}
		}
		anyFits := false
		for _, n := range nodes {
			if Fits(n, req) == "" {
				anyFits = true
			}
		}
		if err != nil {
			if anyFits {
				t.Fatalf("case %d: refused although a node fits: %v", i, err)
			}
			continue
		}
		if why := Fits(*chosen, req); why != "" {
			t.Fatalf("case %d: placed on %s that does not fit: %s", i, got, why)
		}
		mine := room(chosen, &req)
		for _, n := range nodes {
			if Fits(n, req) != "" {
				continue
			}
			other := room(&n, &req)
			if req.Strategy == StrategyMostAllocated && other < mine {
				t.Fatalf("case %d: most-allocated chose %s (room %.3f) over %s (room %.3f)", i, got, mine, n.Name, other)
			}
			if req.Strategy != StrategyMostAllocated && other > mine {
				t.Fatalf("case %d: default chose %s (room %.3f) over %s (room %.3f)", i, got, mine, n.Name, other)
			}
		}
	}
}

// Placing many equal VMs one after another: most-allocated fills few nodes,
// default spreads them over all.
func TestPlace_property_pack_vs_spread(t *testing.T) {
	for _, strategy := range []string{StrategyDefault, StrategyMostAllocated} {
		nodes := make([]Node, 8)
		for i := range nodes {
			nodes[i] = node(fmt.Sprintf("n%d", i), 16, 64)
		}
		for range 16 {
			name, err := placeOver(nodes, Request{Namespace: "ns", CPU: 2, Memory: 4 * gi, Strategy: strategy})
			if err != nil {
				t.Fatal(err)
			}
			for i := range nodes {
				if nodes[i].Name == name {
					nodes[i].FreeCPU -= 2
					nodes[i].FreeMemory -= 4 * gi
				}
			}
		}
		used := 0
		for _, n := range nodes {
			if n.FreeCPU < 16 {
				used++
			}
		}
		switch strategy {
		case StrategyDefault:
			if used != 8 {
				t.Fatalf("default used %d of 8 nodes", used)
			}
		case StrategyMostAllocated:
			if used != 2 {
				t.Fatalf("most-allocated used %d nodes, want 2", used)
			}
		}
	}
}

// BenchmarkPlace_10000_nodes places requests over a view of 10,000 nodes
// (as the leader keeps it between placements; each placement changes one
// node of it, which costs next to nothing: BenchmarkView_set).
func BenchmarkPlace_10000_nodes(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	v := NewView()
	for _, n := range randomCluster(r, 10000) {
		v.Set(n)
	}
	reqs := make([]Request, 256)
	for i := range reqs {
		reqs[i] = randomRequest(r)
	}
	b.ResetTimer()
	for i := range b.N {
		_, _ = v.Place(reqs[i%len(reqs)], nil)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "placements/s")
}

// BenchmarkView_set is one node's update in a view of 10,000 (what a
// placement changes).
func BenchmarkView_set(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	nodes := randomCluster(r, 10000)
	v := NewView()
	for _, n := range nodes {
		v.Set(n)
	}
	b.ResetTimer()
	for i := range b.N {
		n := nodes[i%len(nodes)]
		n.FreeCPU--
		v.Set(n)
	}
}

// fits (the checks that apply to a request) and Fits (all of them) must
// agree on every node and request.
func TestFits_agrees_with_reasons(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 5000 {
		nodes := randomCluster(r, 1)
		req := randomRequest(r)
		if r.IntN(4) == 0 {
			req.Tag, req.TagRequired = "ssd", true
		}
		if r.IntN(5) == 0 {
			req.HostPorts = []int{8080}
			nodes[0].UsedPorts[8080] = r.IntN(2) == 0
		}
		if got, why := fits(&nodes[0], &req, applying(&req)), Fits(nodes[0], req); got != (why == "") {
			t.Fatalf("fits=%v but Fits=%q for %+v / %+v", got, why, nodes[0], req)
		}
	}
}

// placeByReasons is placement written plainly: every node judged by Fits,
// the best by tag, warmth, room and name. Place must agree with it.
func placeByReasons(nodes []Node, r Request) string {
	best := -1
	key := func(n *Node) (bool, int, float64) {
		s := room(n, &r)
		if r.Strategy == StrategyMostAllocated {
			s = -s
		}
		return r.Tag != "" && slices.Contains(n.Tags, r.Tag), warmth(n, &r), s
	}
	for i := range nodes {
		if Fits(nodes[i], r) != "" {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		t1, w1, s1 := key(&nodes[i])
		t0, w0, s0 := key(&nodes[best])
		if t1 != t0 {
			if t1 {
				best = i
			}
			continue
		}
		if w1 != w0 {
			if w1 > w0 {
				best = i
			}
			continue
		}
		if s1 > s0 || s1 == s0 && nodes[i].Name < nodes[best].Name {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return nodes[best].Name
}

func TestPlace_agrees_with_reasons(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 5000 {
		nodes := randomCluster(r, 1+r.IntN(30))
		var holders []string
		for j := range nodes {
			switch r.IntN(6) {
			case 0:
				nodes[j].Cordoned = true
			case 1:
				nodes[j].Namespace = "other"
			case 2:
				holders = append(holders, nodes[j].Name)
			case 3:
				holders = append(holders, nodes[j].Name)
				nodes[j].Templates = []string{"tpl"}
				if r.IntN(2) == 0 {
					nodes[j].Hot = []string{"tpl"}
				}
			case 4:
				nodes[j].UsedPorts[8080] = true
			}
		}
		req := randomRequest(r)
		req.ImageHolders, req.Template = holders, "tpl"
		req.SharedStorage = r.IntN(4) == 0
		switch r.IntN(5) {
		case 0:
			req.Tag, req.TagRequired = "ssd", r.IntN(2) == 0
		case 1:
			req.HostPorts = []int{8080}
		case 2:
			req.Node = nodes[r.IntN(len(nodes))].Name
		}
		got, err := placeOver(nodes, req)
		if want := placeByReasons(nodes, req); got != want || (err != nil) != (want == "") {
			t.Fatalf("case %d: Place chose %q (%v), the reasons choose %q", i, got, err, want)
		}
	}
}

// The rules placement follows, written plainly for the tests' reference.

// warmth ranks what a node has ready for r's VM: a free hot guest of its
// shape (the VM is running already), a booted template of its shape (the
// VM starts without a boot), its image (nothing to copy), or nothing.
func warmth(n *Node, r *Request) int {
	switch {
	case r.Template != "" && slices.Contains(n.Hot, r.Template):
		return 3
	case r.Template != "" && slices.Contains(n.Templates, r.Template):
		return 2
	case slices.Contains(r.ImageHolders, n.Name):
		return 1
	}
	return 0
}

// room is the share of the node left free after the VM lands, averaged over
// CPU and memory (and GPUs when the node has any): 1 is empty, 0 is full.
func room(n *Node, r *Request) float64 {
	c := capacityOf(n)
	return c.room(r)
}

// placeOver places r over a view made of nodes for this one request.
func placeOver(nodes []Node, r Request) (string, error) {
	v := NewView()
	for _, n := range nodes {
		v.Set(n)
	}
	return v.Place(r, nil)
}
