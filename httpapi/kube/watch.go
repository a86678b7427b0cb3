package kube

import (
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/svc-project/svc/api"
)

// initialEventsEnd is the annotation of the BOOKMARK that ends a watch's
// initial events (sendInitialEvents=true), as Kubernetes marks it.
const initialEventsEnd = "k8s.io/initial-events-end"

// kubeEvent is a watch event as Kubernetes streams it.
type kubeEvent struct {
	Type   string `json:"type"`
	Object any    `json:"object"`
}

// serveWatch streams the collection's changes as Kubernetes watch events,
// translated from the /api/v1 watch: without a resourceVersion (or with
// sendInitialEvents=true) an ADDED event for each object first; a
// resourceVersion the peer no longer has answers 410 Gone.
func (c *call) serveWatch(sel selector) {
	if !c.res.watches {
		writeStatus(c.w, api.NewStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", sprintf("%s are not watched: list them", c.res.plural)))
		return
	}
	q := c.r.URL.Query()
	inner := url.Values{}
	if v := q.Get("timeoutSeconds"); v != "" {
		inner.Set("timeoutSeconds", v)
	}
	initial := q.Get("sendInitialEvents") == "true"
	if v := q.Get("resourceVersion"); v != "" && !initial {
		inner.Set("resourceVersion", v)
	}
	bookmarks := q.Get("allowWatchBookmarks") == "true"
	events, stop, refused := c.d.watch(c.r, c.path(), inner)
	if refused != nil {
		if refused.Code() == http.StatusGone {
			writeStatus(c.w, api.NewStatus(http.StatusGone, "Expired", sprintf("too old resource version: %s: %s", q.Get("resourceVersion"), statusMessage(refused))))
			return
		}
		refused.passOn(c.w)
		return
	}
	defer stop()
	c.w.Header().Set("Content-Type", "application/json")
	c.w.Header().Set("Cache-Control", "no-store")
	c.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(c.w)
	_ = rc.Flush()
	enc := json.NewEncoder(c.w)
	listed := inner.Get("resourceVersion") != "" // no first list to end
	asTable := wantsTable(c.r)                   // kubectl get -w: each event's object a table of one row
	for {
		ev, flushed, err := events.next()
		if err != nil {
			return // the watch ended (its timeout, the caller gone, the peer stopping)
		}
		if flushed {
			if rc.Flush() != nil {
				return
			}
			continue
		}
		var out kubeEvent
		switch ev.Type {
		case "ADDED", "MODIFIED", "DELETED":
			r, err := c.d.rendered.render(c, ev)
			if err != nil {
				c.d.cfg.Log.Warn("watch: a record the door cannot read", "resource", c.res.plural, "err", err)
				continue
			}
			if r.skip || !sel.matches(r.obj) {
				continue
			}
			if asTable {
				out = kubeEvent{Type: ev.Type, Object: c.table([]object{r.obj}, ev.ResourceVersion)}
				break
			}
			if _, err := c.w.Write(r.line); err != nil {
				return
			}
			continue
		case "BOOKMARK":
			first := !listed
			listed = true
			if !bookmarks {
				continue
			}
			mark := c.res.newObject()
			c.finish(mark, ev.ResourceVersion)
			mark.meta().Namespace = ""
			if first && initial {
				mark.meta().Annotations = map[string]string{initialEventsEnd: "true"}
			}
			out = kubeEvent{Type: "BOOKMARK", Object: mark}
		case "ERROR":
			var st api.Status
			if json.Unmarshal(ev.Object, &st) != nil {
				st = internal("%s", ev.Object)
			}
			if st.Code == http.StatusGone {
				st.Reason = "Expired"
			}
			out = kubeEvent{Type: "ERROR", Object: st}
		default:
			continue
		}
		if enc.Encode(out) != nil {
			return
		}
	}
}

// statusMessage is the message of a refusal's Status body.
func statusMessage(a *answer) string {
	var st api.Status
	if a.decode(&st) != nil {
		return string(a.Body())
	}
	return st.Message
}
