package kube

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"sync"

	"github.com/svc-project/svc/api"
)

// maxRendered bounds the watch events the door keeps rendered.
const maxRendered = 4096

// rendered is a watch event as the door sends it: its object (shared by
// every watcher that meets the event: read only, as selectors read it)
// and its line; skip is an event of a record the resource does not show.
type rendered struct {
	obj  object
	line []byte
	skip bool
}

// renderKey names an event as one door call renders it: the group
// version, namespace (as the caller named it) and resource, the event's
// type and version, and a hash of the /api/v1 object.
type renderKey struct {
	gv, ns, plural, typ, rv string
	sum                     uint64
}

type renderEntry struct {
	raw []byte // the /api/v1 object, to rule out two objects of one hash
	out rendered
}

// renderCache keeps the door's renderings of watch events, so that an
// event is converted once for all the watchers that meet it (each watch
// of one VM by name among them, which must read every event to match its
// selector), as Kubernetes' own watch cache serialises an event once. The
// oldest go first beyond maxRendered.
type renderCache struct {
	seed    maphash.Seed
	mu      sync.Mutex
	entries map[renderKey]renderEntry
	order   []renderKey // a ring of the keys in the order they came
	next    int
}

func newRenderCache() *renderCache {
	return &renderCache{seed: maphash.MakeSeed(), entries: map[renderKey]renderEntry{}}
}

// render returns the event ev as call c sends it, converting it only when
// no watcher met it before.
func (rc *renderCache) render(c *call, ev api.WatchEvent) (rendered, error) {
	k := renderKey{gv: c.gv, ns: c.ns, plural: c.res.plural, typ: ev.Type, rv: ev.ResourceVersion, sum: maphash.Bytes(rc.seed, ev.Object)}
	rc.mu.Lock()
	e, ok := rc.entries[k]
	rc.mu.Unlock()
	if ok && bytes.Equal(e.raw, ev.Object) {
		return e.out, nil
	}
	o, skip, err := c.res.convert(ev.Object)
	if err != nil {
		return rendered{}, err
	}
	out := rendered{skip: skip}
	if !skip {
		c.finish(o, ev.ResourceVersion)
		line, err := json.Marshal(kubeEvent{Type: ev.Type, Object: o})
		if err != nil {
			return rendered{}, err
		}
		out.obj, out.line = o, append(line, '\n')
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if _, ok := rc.entries[k]; !ok {
		if len(rc.order) < maxRendered {
			rc.order = append(rc.order, k)
		} else {
			delete(rc.entries, rc.order[rc.next])
			rc.order[rc.next] = k
			rc.next = (rc.next + 1) % maxRendered
		}
	}
	rc.entries[k] = renderEntry{raw: bytes.Clone(ev.Object), out: out}
	return out, nil
}
