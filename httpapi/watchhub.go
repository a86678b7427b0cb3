package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/svc-project/svc/raftfsm"
)

// A watch streams the changes of a list (vms, nodes, images, jobs) as
// events. Each peer keeps one hub: at every applied change of the state it
// compares the kinds the change touched, as the API shows them, with what it
// saw last, and appends an event per record that was added, modified or
// deleted, numbered with the state's index (the resourceVersion a client
// resumes from, on any peer). Events are kept in a bounded ring; the
// hub's last view is saved in the data dir, so that a restarted peer still
// tells what changed while it was down (as one event per record).

// Watched kinds: the list routes that take ?watch=true.
const (
	watchVMs    = "vms"
	watchNodes  = "nodes"
	watchImages = "images"
	watchJobs   = "jobs"
)

var watchKinds = []string{watchVMs, watchNodes, watchImages, watchJobs}

// Event types.
const (
	eventAdded    = "ADDED"
	eventModified = "MODIFIED"
	eventDeleted  = "DELETED"
)

// maxWatchEvents bounds the ring; a client further behind lists again.
const maxWatchEvents = 20_000

// watchSaveEvery is how often the hub saves its view when it changed.
const watchSaveEvery = 2 * time.Second

// watchObject is a record as a list shows it.
type watchObject struct {
	NS     string          `json:"ns"`
	Object json.RawMessage `json:"object"`
}

// watchEvent is one change of one record.
type watchEvent struct {
	RV     uint64
	Kind   string
	NS     string
	Type   string
	Object json.RawMessage
}

// watchHub turns the state's changes into events.
type watchHub struct {
	s    *core
	file string
	// refreshMu makes one comparison at a time (the run loop's, or
	// catchUp's): two at once could append an older view's events after a
	// newer one's.
	refreshMu sync.Mutex

	mu    sync.Mutex
	last  map[string]map[string]watchObject // kind -> key -> object
	index uint64                            // the index the last view was taken at
	floor uint64                            // every event after it is in the ring
	// events are in the order of their versions (never decreasing): a
	// watcher finds its place by a search, not a scan of the ring.
	events []watchEvent
	grew   map[string]chan struct{} // by kind: closed when events of it are added
	dirty  bool
	ready  bool
	// viewing, when set, is called as each view is taken (a test applies
	// a change there, as Raft may at any moment).
	viewing func(kind string)
}

func newWatchHub(s *core, file string) *watchHub {
	h := &watchHub{s: s, file: file, last: map[string]map[string]watchObject{}, grew: map[string]chan struct{}{}}
	for _, k := range watchKinds {
		h.grew[k] = make(chan struct{})
	}
	return h
}

// savedView is the hub's view on disk.
type savedView struct {
	Index uint64                            `json:"index"`
	Last  map[string]map[string]watchObject `json:"last"`
}

// run keeps the hub's events until ctx ends.
func (h *watchHub) run(ctx context.Context) {
	f := h.s.replica.FSM()
	if v, err := h.load(); err == nil {
		h.mu.Lock()
		h.last, h.index, h.floor = v.Last, v.Index, v.Index
		h.mu.Unlock()
	} else {
		if !errors.Is(err, os.ErrNotExist) {
			h.s.log.Warn("the watch view on disk is unreadable; starting from now", "err", err)
		}
		h.mu.Lock()
		h.index = f.Index() // before the views, as in refresh
		for _, k := range watchKinds {
			h.last[k] = h.view(k)
		}
		h.floor = h.index
		h.mu.Unlock()
	}
	h.mu.Lock()
	h.ready = true
	h.mu.Unlock()
	save := time.NewTicker(watchSaveEvery)
	defer save.Stop()
	kinds := watchKinds // first, what changed while the peer was down
	for {
		// The channels are taken before the views are compared: a change
		// applied after the comparison closes them, and none is missed.
		vm, node := f.Watch(raftfsm.ResourceTopic(raftfsm.ResourceVM)), f.Watch(raftfsm.ResourceTopic(raftfsm.ResourceNode))
		image, blob := f.Watch(raftfsm.ResourceTopic(raftfsm.ResourceImage)), f.Watch(raftfsm.ResourceTopic(raftfsm.ResourceBlob))
		job := f.Watch(raftfsm.ResourceTopic(raftfsm.ResourceJob))
		if len(kinds) > 0 {
			h.refreshMu.Lock()
			h.refresh(kinds)
			h.refreshMu.Unlock()
		}
		select {
		case <-ctx.Done():
			h.save()
			return
		case <-save.C:
			h.save()
		case <-vm:
		case <-node:
		case <-image:
		case <-blob:
		case <-job:
		}
		kinds = touched(vm, node, image, blob, job)
	}
}

// touched returns the kinds to compare after the changes whose channels
// are closed: a VM's status shows its node's phase, and a node its VMs'
// use and the images it holds, so those go together; jobs alone.
func touched(vm, node, image, blob, job <-chan struct{}) []string {
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	var kinds []string
	vms, images := closed(vm) || closed(node), closed(image) || closed(blob)
	if vms {
		kinds = append(kinds, watchVMs)
	}
	if vms || images {
		kinds = append(kinds, watchNodes)
	}
	if images {
		kinds = append(kinds, watchImages)
	}
	if closed(job) {
		kinds = append(kinds, watchJobs)
	}
	return kinds
}

// view is the current list of a kind as the API shows it, by key.
func (h *watchHub) view(kind string) map[string]watchObject {
	if h.viewing != nil {
		h.viewing(kind)
	}
	s, f := h.s, h.s.replica.FSM()
	out := map[string]watchObject{}
	put := func(ns, name string, v any) {
		b, err := json.Marshal(v)
		if err == nil {
			out[ns+"/"+name] = watchObject{NS: ns, Object: b}
		}
	}
	switch kind {
	case watchVMs:
		for _, vm := range f.VMs("") {
			put(vm.Namespace, vm.Name, s.vmToAPI(vm))
		}
	case watchNodes:
		images := map[string][]raftfsm.Image{}
		for _, n := range f.Nodes() {
			if _, ok := images[n.Namespace]; !ok {
				images[n.Namespace] = f.Images(n.Namespace)
			}
			put(n.Namespace, n.Name, s.nodeRecord(n, images[n.Namespace]))
		}
	case watchImages:
		// One pass over the images, not one per namespace: a restored
		// state of 200,000 namespaces made every comparison seconds of CPU.
		for _, img := range f.AllImages() {
			put(img.Namespace, img.Name, imageToAPI(img))
		}
	case watchJobs:
		for _, j := range f.Jobs("") {
			put(j.Namespace, j.Name, jobToAPI(j))
		}
	}
	return out
}

// viewTries bounds how many times refresh takes its views again when the
// state changed while it took them.
const viewTries = 3

// refresh compares kinds with the last view and appends the events.
//
// Events carry the version they are stamped with, and a watcher reads the
// events after its version: every event must be stamped after every
// version a watcher may hold that does not show it (the hub's index, which
// a list answers with, or an event's version a client resumes from), or
// that watcher never sees it. The views are the state at the index read
// before and after them when the two are the same (no change was applied
// meanwhile); they are taken again, viewTries times at most, while the two
// differ. A change applied between the last views and the index read
// after them is in none of them and comes in the next comparison, stamped
// with a version after the hub's index: at worst one past the state's (a
// watch that resumes from it here is served; reachVersion).
func (h *watchHub) refresh(kinds []string) {
	f := h.s.replica.FSM()
	var (
		views map[string]map[string]watchObject
		rv    uint64
	)
	for try := 1; ; try++ {
		before := f.Index()
		views = map[string]map[string]watchObject{}
		for _, k := range kinds {
			views[k] = h.view(k)
		}
		if rv = f.Index(); rv == before || try == viewTries {
			break
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var evs []watchEvent
	for _, k := range kinds {
		old, cur := h.last[k], views[k]
		for key, o := range cur {
			p, ok := old[key]
			switch {
			case !ok:
				evs = append(evs, watchEvent{Kind: k, NS: o.NS, Type: eventAdded, Object: o.Object})
			case !bytes.Equal(p.Object, o.Object):
				evs = append(evs, watchEvent{Kind: k, NS: o.NS, Type: eventModified, Object: o.Object})
			}
		}
		for key, p := range old {
			if _, ok := cur[key]; !ok {
				evs = append(evs, watchEvent{Kind: k, NS: p.NS, Type: eventDeleted, Object: p.Object})
			}
		}
		h.last[k] = cur
	}
	if len(evs) > 0 && rv <= h.index {
		rv = h.index + 1 // after every version a watcher holds
	}
	for i := range evs {
		evs[i].RV = rv
	}
	h.addLocked(rv, evs)
}

// version is the index the hub's events are complete up to.
func (h *watchHub) version() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.index
}

// addLocked appends events taken at version rv (h.mu held), drops the
// oldest past the ring's bound, and wakes the watchers of their kinds.
func (h *watchHub) addLocked(rv uint64, evs []watchEvent) {
	if rv > h.index {
		h.index = rv
	}
	if len(evs) == 0 {
		return
	}
	h.events = append(h.events, evs...)
	// The ring is cut by an eighth at a time: a copy of it once every
	// maxWatchEvents/8 events, not at every change.
	if over := len(h.events) - maxWatchEvents; over > maxWatchEvents/8 {
		h.floor = h.events[over-1].RV
		h.events = append(make([]watchEvent, 0, maxWatchEvents+maxWatchEvents/4), h.events[over:]...)
	}
	h.dirty = true
	woken := map[string]bool{}
	for _, e := range evs {
		if !woken[e.Kind] {
			woken[e.Kind] = true
			close(h.grew[e.Kind])
			h.grew[e.Kind] = make(chan struct{})
		}
	}
}

// catchUp makes sure the events hold every change of the state up to
// index upTo: the hub compares its views when a watched kind changes, so
// its own index may trail the state's (changes of other kinds move it
// without waking the hub); then it compares every kind now. One caller
// compares; those waiting behind it find the index reached.
func (h *watchHub) catchUp(upTo uint64) {
	h.refreshMu.Lock()
	defer h.refreshMu.Unlock()
	h.mu.Lock()
	done := !h.ready || h.index >= upTo
	h.mu.Unlock()
	if !done {
		h.refresh(watchKinds)
	}
}

// errTooOld is returned for a resourceVersion the ring no longer covers.
var errTooOld = errors.New("too old")

// since returns the events of kind after rv (filtered by keep), the
// version they bring the watcher to, and a channel closed when more of
// kind come. It reads only the events after rv: a watcher resuming at its
// place costs what is new, however full the ring.
func (h *watchHub) since(kind string, rv uint64, keep func(watchEvent) bool) ([]watchEvent, uint64, <-chan struct{}, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rv < h.floor {
		return nil, rv, h.grew[kind], fmt.Errorf("resourceVersion %d: %w (the oldest this peer can resume from is %d)", rv, errTooOld, h.floor)
	}
	var out []watchEvent
	first := sort.Search(len(h.events), func(i int) bool { return h.events[i].RV > rv })
	for _, e := range h.events[first:] {
		if e.Kind == kind && keep(e) {
			out = append(out, e)
		}
	}
	return out, max(rv, h.index), h.grew[kind], nil
}

// list returns the hub's view of kind (filtered by keep) and its version.
func (h *watchHub) list(kind string, keep func(ns string) bool) ([]json.RawMessage, uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.ready {
		return nil, 0, false
	}
	var out []json.RawMessage
	for _, o := range h.last[kind] {
		if keep(o.NS) {
			out = append(out, o.Object)
		}
	}
	return out, h.index, true
}

func (h *watchHub) load() (savedView, error) {
	var v savedView
	if h.file == "" {
		return v, os.ErrNotExist
	}
	b, err := os.ReadFile(h.file)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, err
	}
	if v.Last == nil {
		v.Last = map[string]map[string]watchObject{}
	}
	return v, nil
}

// save writes the view when it changed (a new file renamed over the old).
func (h *watchHub) save() {
	h.mu.Lock()
	if !h.dirty || h.file == "" {
		h.mu.Unlock()
		return
	}
	b, err := json.Marshal(savedView{Index: h.index, Last: h.last})
	h.dirty = false
	h.mu.Unlock()
	if err == nil {
		tmp := h.file + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, filepath.Clean(h.file))
		}
	}
	if err != nil {
		h.s.log.Warn("save the watch view", "err", err)
	}
}
