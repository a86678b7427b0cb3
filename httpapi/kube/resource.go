package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/svc-project/svc/api"
)

// maxBody bounds a create's body.
const maxBody = 1 << 20

// object is one of the door's objects.
type object interface {
	meta() *metav1.ObjectMeta
	typeMeta() *metav1.TypeMeta
}

// resource is one kind of object the door serves, and the /api/v1
// collection it is made from.
type resource struct {
	plural, singular, kind string
	shortNames             []string
	// svc is the /api/v1 collection under a namespace (vms, images, ...).
	svc string
	// watches: the collection can be watched, and lists come from a
	// watch's first list (its version exact); else from a list, at the
	// replica's index.
	watches bool
	deletes bool
	// convert makes an /api/v1 record the door's object; skip: the record
	// is no object of this resource (a job that is no push).
	convert func(raw json.RawMessage) (obj object, skip bool, err error)
	// create makes an object from a decoded create body (nil: no creates).
	create func(c *call, body []byte)
	// newObject is an empty object, for checking a create's fields.
	newObject func() object
}

// call is one request on a resource in a namespace.
type call struct {
	d   *Door
	w   http.ResponseWriter
	r   *http.Request
	res *resource
	gv  string
	ns  string
}

// path is the /api/v1 path of the collection, or of its object name.
func (c *call) path(name ...string) string {
	p := "/api/v1/namespaces/" + url.PathEscape(c.ns) + "/" + c.res.svc
	for _, n := range name {
		p += "/" + url.PathEscape(n)
	}
	return p
}

// finish sets what every answered object carries: its kind, namespace and
// version.
func (c *call) finish(o object, version string) {
	*o.typeMeta() = metav1.TypeMeta{APIVersion: c.gv, Kind: c.res.kind}
	m := o.meta()
	m.Namespace, m.ResourceVersion = c.ns, version
	if n, ok := o.(*OrkaNode); ok && n.Spec.Namespace == c.d.canonical(c.ns) {
		n.Spec.Namespace = c.ns // the name its caller knows the namespace by
	}
}

// selector is a list's or watch's fieldSelector and labelSelector.
type selector struct {
	fields fields.Selector
	labels labels.Selector
}

// Bounds of a selector: its length and how many requirements it makes. A
// watch holds its parsed selector while it is open: without them a member
// held megabytes of the peer's memory per watch.
const (
	maxSelectorBytes        = 4 << 10
	maxSelectorRequirements = 32
)

// selectorOf parses the query's selectors: fields metadata.name and
// metadata.namespace, labels any.
func selectorOf(q url.Values) (selector, error) {
	s := selector{fields: fields.Everything(), labels: labels.Everything()}
	for _, k := range []string{"fieldSelector", "labelSelector"} {
		if len(q[k]) > 1 {
			return s, fmt.Errorf("%s is given %d times; give it once", k, len(q[k]))
		}
		if n := len(q.Get(k)); n > maxSelectorBytes {
			return s, fmt.Errorf("%s is %d bytes, at most %d", k, n, maxSelectorBytes)
		}
	}
	if v := q.Get("fieldSelector"); v != "" {
		f, err := fields.ParseSelector(v)
		if err != nil {
			return s, err
		}
		if n := len(f.Requirements()); n > maxSelectorRequirements {
			return s, fmt.Errorf("fieldSelector makes %d requirements, at most %d", n, maxSelectorRequirements)
		}
		for _, req := range f.Requirements() {
			if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
				return s, errors.New("field label not supported: " + req.Field + " (a fieldSelector may name metadata.name and metadata.namespace)")
			}
		}
		s.fields = f
	}
	if v := q.Get("labelSelector"); v != "" {
		l, err := labels.Parse(v)
		if err != nil {
			return s, err
		}
		if reqs, _ := l.Requirements(); len(reqs) > maxSelectorRequirements {
			return s, fmt.Errorf("labelSelector makes %d requirements, at most %d", len(reqs), maxSelectorRequirements)
		}
		s.labels = l
	}
	return s, nil
}

func (s selector) matches(o object) bool {
	m := o.meta()
	return s.fields.Matches(fields.Set{"metadata.name": m.Name, "metadata.namespace": m.Namespace}) && s.labels.Matches(labels.Set(m.Labels))
}

func (c *call) list() {
	q := c.r.URL.Query()
	sel, err := selectorOf(q)
	if err != nil {
		writeStatus(c.w, badRequest("%s", err))
		return
	}
	if v := q.Get("watch"); v == "true" || v == "1" {
		c.serveWatch(sel)
		return
	}
	var (
		raws    []json.RawMessage
		version string
	)
	if c.res.watches {
		events, stop, refused := c.d.watch(c.r, c.path(), url.Values{})
		if refused != nil {
			refused.passOn(c.w)
			return
		}
		raws, version, err = firstList(events)
		stop()
	} else {
		version = rv(c.d.cfg.Index())
		a := c.d.call(c.r, http.MethodGet, c.path(), nil, nil)
		if !a.ok() {
			a.passOn(c.w)
			return
		}
		var l api.List[json.RawMessage]
		err = a.decode(&l)
		raws = l.Items
	}
	if err != nil {
		writeStatus(c.w, internal("reading %s: %v", c.res.svc, err))
		return
	}
	out := list[object]{TypeMeta: metav1.TypeMeta{APIVersion: c.gv, Kind: c.res.kind + "List"}, ListMeta: metav1.ListMeta{ResourceVersion: version}, Items: []object{}}
	for _, raw := range raws {
		o, skip, err := c.res.convert(raw)
		if err != nil {
			writeStatus(c.w, internal("reading %s: %v", c.res.svc, err))
			return
		}
		if skip {
			continue
		}
		c.finish(o, version)
		if sel.matches(o) {
			out.Items = append(out.Items, o)
		}
	}
	if wantsTable(c.r) {
		writeJSON(c.w, http.StatusOK, c.table(out.Items, version))
		return
	}
	writeJSON(c.w, http.StatusOK, out)
}

// firstList reads a watch's events up to its first BOOKMARK: the records
// of its first list and their version.
func firstList(events *watchEvents) ([]json.RawMessage, string, error) {
	var raws []json.RawMessage
	for {
		ev, flushed, err := events.next()
		if err != nil {
			return nil, "", err
		}
		if flushed {
			continue
		}
		switch ev.Type {
		case "ADDED":
			raws = append(raws, ev.Object)
		case "BOOKMARK":
			return raws, ev.ResourceVersion, nil
		default:
			return nil, "", errors.New("a watch's first list ended with a " + ev.Type + " event: " + string(ev.Object))
		}
	}
}

func (c *call) get(name string) {
	version := rv(c.d.cfg.Index())
	a := c.d.call(c.r, http.MethodGet, c.path(name), nil, nil)
	if !a.ok() {
		c.refused(a, name)
		return
	}
	o, skip, err := c.res.convert(a.Body())
	switch {
	case err != nil:
		writeStatus(c.w, internal("reading %s %q: %v", c.res.singular, name, err))
	case skip:
		c.notFound(name)
	case wantsTable(c.r):
		c.finish(o, version)
		writeJSON(c.w, http.StatusOK, c.table([]object{o}, version))
	default:
		c.finish(o, version)
		writeJSON(c.w, http.StatusOK, o)
	}
}

// delete deletes name; DeleteOptions' preconditions are checked.
func (c *call) delete(name string) {
	if refusedDryRun(c.w, c.r) {
		return
	}
	var opts metav1.DeleteOptions
	if b, st := readBody(c.r); st != nil {
		writeStatus(c.w, *st)
		return
	} else if len(strings.TrimSpace(string(b))) > 0 {
		if err := json.Unmarshal(b, &opts); err != nil {
			writeStatus(c.w, badRequest("the body is no DeleteOptions: %v", err))
			return
		}
	}
	if len(opts.DryRun) > 0 {
		writeStatus(c.w, badRequest("dryRun %v: svc's Kubernetes door does not support dry runs; nothing was deleted (send the call without dryRun to delete)", opts.DryRun))
		return
	}
	if p := opts.Preconditions; p != nil && (p.UID != nil || p.ResourceVersion != nil) {
		a := c.d.call(c.r, http.MethodGet, c.path(name), nil, nil)
		if !a.ok() {
			c.refused(a, name)
			return
		}
		o, _, err := c.res.convert(a.Body())
		if err != nil {
			writeStatus(c.w, internal("reading %s %q: %v", c.res.singular, name, err))
			return
		}
		if p.UID != nil && *p.UID != o.meta().UID {
			writeStatus(c.w, api.NewStatus(http.StatusConflict, api.ReasonConflict, sprintf("Precondition failed: UID in precondition: %s, UID in object meta: %s", *p.UID, o.meta().UID)))
			return
		}
		if p.ResourceVersion != nil {
			if st := c.unchangedSince(name, *p.ResourceVersion); st != nil {
				writeStatus(c.w, *st)
				return
			}
		}
	}
	a := c.d.call(c.r, http.MethodDelete, c.path(name), nil, nil)
	if !a.ok() {
		c.refused(a, name)
		return
	}
	group := strings.TrimSuffix(c.gv, "/"+Version)
	if c.gv == "v1" {
		group = ""
	}
	writeJSON(c.w, http.StatusOK, map[string]any{
		"kind": "Status", "apiVersion": "v1", "status": "Success",
		"details": map[string]string{"name": name, "group": group, "kind": c.res.plural},
	})
}

// unchangedSince checks a resourceVersion precondition: the door gives an
// object the version it was read at, so the precondition holds when the
// object has not changed after that version (its collection's watch from
// it names no change of it). A version this peer can no longer tell about,
// or one it has not reached, fails it as a changed one does: 409.
func (c *call) unchangedSince(name, version string) *api.Status {
	conflict := func(why string) *api.Status {
		st := api.NewStatus(http.StatusConflict, api.ReasonConflict, sprintf("Precondition failed: ResourceVersion in precondition: %s: %s", version, why))
		return &st
	}
	if _, err := strconv.ParseUint(version, 10, 64); err != nil || !c.res.watches {
		return conflict("it is not a version of this object")
	}
	events, stop, refused := c.d.watch(c.r, c.path(), url.Values{"resourceVersion": {version}})
	if refused != nil {
		return conflict(statusMessage(refused))
	}
	defer stop()
	for {
		ev, flushed, err := events.next()
		if err != nil {
			return conflict("its changes since could not be read: " + err.Error())
		}
		if flushed {
			continue
		}
		switch ev.Type {
		case "BOOKMARK": // every change after the version is read
			return nil
		case "ERROR":
			return conflict(string(ev.Object))
		}
		if o, skip, err := c.res.convert(ev.Object); err == nil && !skip && o.meta().Name == name {
			return conflict("the object has been modified since; read it again")
		}
	}
}

// refused answers an /api/v1 refusal of a call on the object name: a 404
// as Kubernetes words it (the object, by its resource and group, never by
// the namespace /api/v1 knows it in: a caller of the alias named
// another), any other as it is.
func (c *call) refused(a *answer, name string) {
	if a.Code() == http.StatusNotFound {
		c.notFound(name)
		return
	}
	a.passOn(c.w)
}

// notFound answers that the object name is not there, as a Kubernetes
// server does: `virtualmachineinstances.orka.macstadium.com "x" not found`.
func (c *call) notFound(name string) {
	group := strings.TrimSuffix(c.gv, "/"+Version)
	if c.gv == "v1" {
		group = ""
	}
	resource := c.res.plural
	if group != "" {
		resource += "." + group
	}
	writeJSON(c.w, http.StatusNotFound, metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: sprintf("%s %q not found", resource, name), Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound,
		Details: &metav1.StatusDetails{Name: name, Group: group, Kind: c.res.plural},
	})
}

func internal(format string, args ...any) api.Status {
	return api.NewStatus(http.StatusInternalServerError, api.ReasonInternalError, sprintf(format, args...))
}
