package scheduler

import (
	"math"
	"slices"
	"strings"
)

// View is the scheduler's index of a cluster's nodes, kept from placement to
// placement and brought up to date node by node (Set, Remove): per
// namespace the nodes that take VMs (READY, not cordoned), with what each
// has free packed together so that a placement over ten thousand nodes
// reads a few hundred kilobytes; per tag and per template the nodes that
// carry them. A View is not safe for concurrent use.
type View struct {
	nodes []Node           // by slot; a removed node's slot has no name
	slots map[string]int32 // name -> slot
	spare []int32          // slots of removed nodes, for reuse
	at    []poolAt         // slot -> its place in a pool (nil pool: it takes no VMs)
	pools map[string]*pool // namespace -> the nodes of it that take VMs
	// tags, templates and hot index the nodes carrying each tag, holding
	// each template and a free hot guest of each shape (by shape key).
	tags, templates, hot map[string]map[int32]struct{}
	// mark is one placement's scratch, by slot: the tier a node is in for
	// the request (markTag, markImage, markTemplate, markHot). Cleared
	// after use.
	mark []uint8
}

type poolAt struct {
	p   *pool
	pos int
}

// pool is the nodes of one namespace that take VMs: cap[i] is what node
// slot[i] has.
type pool struct {
	slot []int32
	cap  []capacity
}

// capacity is what a node has free, as placement reads it: its free CPUs,
// memory and GPUs, and the inverse of each total (0 for none), so that
// scoring a node multiplies rather than divides.
type capacity struct {
	cpu, mem, gpu          float64 // free
	perCPU, perMem, perGPU float64 // 1/total
	perShare               float64 // 1 / the number of shares averaged (2, or 3 with GPUs)
}

func capacityOf(n *Node) capacity {
	per := func(total float64) float64 {
		if total <= 0 {
			return 0
		}
		return 1 / total
	}
	c := capacity{
		cpu: float64(n.FreeCPU), mem: float64(n.FreeMemory), gpu: float64(n.FreeGPU),
		perCPU: per(float64(n.TotalCPU)), perMem: per(float64(n.TotalMemory)), perGPU: per(float64(n.TotalGPU)),
		perShare: 1.0 / 2,
	}
	if n.TotalGPU > 0 {
		c.perShare = 1.0 / 3
	}
	return c
}

// holds reports whether the node has r's CPU, memory and GPUs free (counts
// of CPUs and bytes are exact in a float64).
func (c *capacity) holds(r *Request) bool {
	return c.cpu >= float64(r.CPU) && c.mem >= float64(r.Memory) && (r.GPU == 0 || c.gpu >= float64(r.GPU))
}

// room is the share of the node left free after r's VM lands, averaged
// over CPU and memory (and GPUs when the node has any): 1 is empty, 0 is
// full.
func (c *capacity) room(r *Request) float64 {
	return ((c.cpu-float64(r.CPU))*c.perCPU + (c.mem-float64(r.Memory))*c.perMem + (c.gpu-float64(r.GPU))*c.perGPU) * c.perShare
}

// The tiers of mark.
const (
	markTag uint8 = 1 << iota
	markImage
	markTemplate
	markHot
)

// NewView returns an empty view.
func NewView() *View {
	return &View{slots: map[string]int32{}, pools: map[string]*pool{},
		tags: map[string]map[int32]struct{}{}, templates: map[string]map[int32]struct{}{}, hot: map[string]map[int32]struct{}{}}
}

// Len returns how many nodes the view holds.
func (v *View) Len() int { return len(v.slots) }

// Set adds n to the view or replaces the node of its name. The view keeps
// n's slices and map: the caller must not change them afterwards.
func (v *View) Set(n Node) {
	s, ok := v.slots[n.Name]
	switch {
	case ok:
		v.unindex(s)
	case len(v.spare) > 0:
		s, v.spare = v.spare[len(v.spare)-1], v.spare[:len(v.spare)-1]
	default:
		s = int32(len(v.nodes))
		v.nodes = append(v.nodes, Node{})
		v.at = append(v.at, poolAt{})
		v.mark = append(v.mark, 0)
	}
	v.slots[n.Name] = s
	v.nodes[s] = n
	index(v.tags, n.Tags, s)
	index(v.templates, n.Templates, s)
	index(v.hot, n.Hot, s)
	takes := n.Ready && !n.Cordoned
	at := &v.at[s]
	if at.p != nil && (!takes || at.p != v.pools[n.Namespace]) {
		v.leavePool(s)
	}
	switch {
	case !takes:
	case at.p != nil:
		at.p.cap[at.pos] = capacityOf(&n)
	default:
		p := v.pools[n.Namespace]
		if p == nil {
			p = &pool{}
			v.pools[n.Namespace] = p
		}
		*at = poolAt{p: p, pos: len(p.slot)}
		p.slot = append(p.slot, s)
		p.cap = append(p.cap, capacityOf(&n))
	}
}

// Remove drops the node named name from the view, if it holds it.
func (v *View) Remove(name string) {
	s, ok := v.slots[name]
	if !ok {
		return
	}
	v.unindex(s)
	if v.at[s].p != nil {
		v.leavePool(s)
	}
	delete(v.slots, name)
	v.nodes[s] = Node{}
	v.spare = append(v.spare, s)
}

func index(ix map[string]map[int32]struct{}, keys []string, s int32) {
	for _, k := range keys {
		if ix[k] == nil {
			ix[k] = map[int32]struct{}{}
		}
		ix[k][s] = struct{}{}
	}
}

func unindexKeys(ix map[string]map[int32]struct{}, keys []string, s int32) {
	for _, k := range keys {
		delete(ix[k], s)
		if len(ix[k]) == 0 {
			delete(ix, k)
		}
	}
}

// unindex drops slot s from the tag and template indexes.
func (v *View) unindex(s int32) {
	unindexKeys(v.tags, v.nodes[s].Tags, s)
	unindexKeys(v.templates, v.nodes[s].Templates, s)
	unindexKeys(v.hot, v.nodes[s].Hot, s)
}

// leavePool takes slot s out of its pool: the pool's last node takes its
// place.
func (v *View) leavePool(s int32) {
	at := v.at[s]
	p, last := at.p, len(at.p.slot)-1
	moved := p.slot[last]
	p.slot[at.pos], p.cap[at.pos] = moved, p.cap[last]
	v.at[moved].pos = at.pos
	p.slot, p.cap = p.slot[:last], p.cap[:last]
	v.at[s] = poolAt{}
}

// Facts gives what placement checks on a node only for some requests, and
// what changes with every VM: the ports a node's VMs and peer hold (for a
// request reserving host ports) and its macOS VMs (for a macOS guest).
type Facts interface {
	UsedPorts(node string) map[int]bool
	MacOSVMs(node string) int
}

// Place picks the node for r. Nodes of other namespaces are ignored (and
// not named in the error). Without TagRequired, nodes carrying the tag come
// first; then nodes with a booted template of the VM's shape, then nodes
// holding its image (the VM starts sooner there); then the strategy's
// score. Ties go to the node whose name sorts first. facts, when not nil,
// gives the nodes' ports and macOS VMs; otherwise the nodes' own fields do.
func (v *View) Place(r Request, facts Facts) (string, error) {
	packs := r.Strategy == StrategyMostAllocated
	// The checks every request has (namespace, ready, cordoned: the pool;
	// CPU, memory, GPUs: holds) run inline on the packed capacities; the
	// others only on the nodes that pass them.
	var rest []*check
	for _, c := range applying(&r) {
		switch c.name {
		case "namespace", "ready", "cordoned", "cpu", "memory", "gpu":
		default:
			rest = append(rest, c)
		}
	}
	marked := v.markTiers(&r)
	defer v.unmark(marked)
	p := v.pools[r.Namespace]
	takes := func(s int32, c *capacity) bool {
		return c.holds(&r) && (len(rest) == 0 || fits(v.withFacts(s, &r, facts), &r, rest))
	}
	// The marked nodes first: one that takes the VM is in a higher tier than
	// every unmarked node, and the pool's scan is not needed.
	best, bestScore, bestTier := int32(-1), 0.0, uint8(0)
	for _, s := range marked {
		at := v.at[s]
		if at.p == nil || at.p != p || !takes(s, &p.cap[at.pos]) {
			continue
		}
		score := p.cap[at.pos].room(&r)
		if packs {
			score = -score
		}
		tier := tierOf(v.mark[s])
		switch {
		case best < 0,
			tier > bestTier,
			tier == bestTier && score > bestScore,
			tier == bestTier && score == bestScore && v.nodes[s].Name < v.nodes[best].Name:
			best, bestScore, bestTier = s, score, tier
		}
	}
	if best < 0 && p != nil {
		best = v.scan(p, &r, packs, takes)
	}
	if best >= 0 {
		return v.nodes[best].Name, nil
	}
	var reasons []Reason
	for s := range v.nodes {
		if n := &v.nodes[s]; n.Name != "" && n.Namespace == r.Namespace {
			reasons = append(reasons, Reason{Node: n.Name, Reason: Fits(*v.withFacts(int32(s), &r, facts), r)})
		}
	}
	slices.SortFunc(reasons, func(a, b Reason) int { return strings.Compare(a.Node, b.Node) })
	return "", &NoFitError{Namespace: r.Namespace, Reasons: reasons}
}

// scan returns the pool's node with the best score that takes r's VM (-1
// for none); ties go to the name that sorts first. Every node's score is
// computed and a node that cannot hold the VM gets noFit without a branch:
// on a cluster where about half the nodes hold a request, a branch per node
// is mispredicted half the time and costs more than the arithmetic.
func (v *View) scan(p *pool, r *Request, packs bool, takes func(int32, *capacity) bool) int32 {
	const noFit = -1e300 // below every score (scores are within [-1, 1])
	noFitBits := math.Float64bits(noFit)
	sign := 1.0
	if packs {
		sign = -1
	}
	needCPU, needMem, needGPU := float64(r.CPU), float64(r.Memory), float64(r.GPU)
	if r.GPU == 0 {
		needGPU = math.Inf(-1) // any node holds no GPU, even one whose GPUs are overcommitted
	}
	best, bestKey := int32(-1), noFit
	for i := range p.cap {
		c := &p.cap[i]
		// short is all ones when a free count is below the need (its
		// difference's sign bit), then key is noFit.
		short := -((math.Float64bits(c.cpu-needCPU) | math.Float64bits(c.mem-needMem) | math.Float64bits(c.gpu-needGPU)) >> 63)
		key := math.Float64frombits(math.Float64bits(sign*c.room(r))&^short | noFitBits&short)
		if key < bestKey || key == noFit {
			continue
		}
		s := p.slot[i]
		if key == bestKey && v.nodes[s].Name > v.nodes[best].Name || !takes(s, c) {
			continue
		}
		best, bestKey = s, key
	}
	return best
}

// tierOf orders a node's marks: the request's tag above all, then a free
// hot guest, then a template, then the image.
func tierOf(m uint8) uint8 {
	t := uint8(0)
	switch {
	case m&markHot != 0:
		t = 3
	case m&markTemplate != 0:
		t = 2
	case m&markImage != 0:
		t = 1
	}
	if m&markTag != 0 {
		t += 4
	}
	return t
}

// withFacts returns slot s's node, with its ports and macOS VMs from facts
// when r's checks read them.
func (v *View) withFacts(s int32, r *Request, facts Facts) *Node {
	n := &v.nodes[s]
	if facts == nil || len(r.HostPorts) == 0 && !r.MacOS {
		return n
	}
	c := *n
	if len(r.HostPorts) > 0 {
		c.UsedPorts = facts.UsedPorts(n.Name)
	}
	if r.MacOS {
		c.MacOSVMs = facts.MacOSVMs(n.Name)
	}
	return &c
}

// markTiers marks the nodes carrying r's tag (when it prefers one) and
// those holding its template or image, and returns the slots marked.
func (v *View) markTiers(r *Request) []int32 {
	var marked []int32
	set := func(s int32, m uint8) {
		if v.mark[s] == 0 {
			marked = append(marked, s)
		}
		v.mark[s] |= m
	}
	if r.Tag != "" && !r.TagRequired {
		for s := range v.tags[r.Tag] {
			set(s, markTag)
		}
	}
	if r.Template != "" {
		for s := range v.templates[r.Template] {
			set(s, markTemplate)
		}
		for s := range v.hot[r.Template] {
			set(s, markHot)
		}
	}
	for _, name := range r.ImageHolders {
		if s, ok := v.slots[name]; ok {
			set(s, markImage)
		}
	}
	return marked
}

func (v *View) unmark(marked []int32) {
	for _, s := range marked {
		v.mark[s] = 0
	}
}
