package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/svc-project/svc/api"
)

// Watching a list: GET .../vms?watch=true (and nodes, images, jobs)
// answers newline-delimited JSON events, {type, object, resourceVersion},
// for as long as the client stays (at most timeoutSeconds). Without a
// resourceVersion the stream starts with an ADDED event per record; with
// one, it carries the changes after it (410 when this peer no longer has
// them: list again). A BOOKMARK ends the first list. A BOOKMARK event every watchBookmarkEvery carries the
// version reached, to resume from.

// Bounds of a watch.
const (
	defaultWatchTimeout = 30 * time.Minute
	maxWatchTimeout     = 6 * time.Hour
	watchBookmarkEvery  = 15 * time.Second
)

// RunWatches keeps the events watches are served from until ctx ends;
// file, when set, keeps the hub's view across restarts.
func (s *Server) RunWatches(ctx context.Context, file string) {
	h := newWatchHub(s.core, file)
	s.hubMu.Lock()
	s.hub = h
	s.hubMu.Unlock()
	h.run(ctx)
}

func (s *core) watchHub() *watchHub {
	s.hubMu.Lock()
	defer s.hubMu.Unlock()
	return s.hub
}

// wantsWatch reports whether a list request asks for a watch.
func wantsWatch(r *http.Request) bool { return r.URL.Query().Get("watch") == "true" }

// serveWatch streams the events of kind in namespace ns.
func (s *core) serveWatch(w http.ResponseWriter, r *http.Request, kind, ns string) error {
	q := r.URL.Query()
	timeout := defaultWatchTimeout
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || time.Duration(n)*time.Second > maxWatchTimeout {
			return badRequest("query parameter \"timeoutSeconds\": %q is not 1 to %d", v, int(maxWatchTimeout/time.Second))
		}
		timeout = time.Duration(n) * time.Second
	}
	var from uint64
	resume := false
	if v := q.Get("resourceVersion"); v != "" && v != "0" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return badRequest("query parameter \"resourceVersion\": %q is not a version", v)
		}
		from, resume = n, true
	}
	h := s.watchHub()
	if h == nil {
		return unavailable("1", "this peer does not serve watches yet")
	}
	pr := principalOf(r.Context())
	reach := func(evNS string) bool { return evNS == ns && s.canReach(pr, ns) }
	keep := func(e watchEvent) bool { return reach(e.NS) }
	if resume {
		if err := s.reachVersion(r.Context(), from); err != nil {
			return err
		}
		if _, _, _, err := h.since(kind, from, keep); errors.Is(err, errTooOld) {
			return errorf(http.StatusGone, "Expired", "%s; list again and watch from the list's version", err)
		}
		// The replay's BOOKMARK says every change up to now is sent: the
		// events hold every change the replica has applied first.
		h.catchUp(s.replica.FSM().Index())
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	send := func(typ string, obj json.RawMessage, rv uint64) error {
		return enc.Encode(api.WatchEvent{Type: typ, Object: obj, ResourceVersion: strconv.FormatUint(rv, 10)})
	}
	if !resume {
		objs, rv, ok := h.list(kind, reach)
		for !ok { // the hub is still reading the state at start
			select {
			case <-r.Context().Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
			objs, rv, ok = h.list(kind, reach)
		}
		for _, o := range objs {
			if send(eventAdded, o, rv) != nil {
				return nil
			}
		}
		// The list is whole (an empty one too): a client may show it.
		if send("BOOKMARK", nil, rv) != nil {
			return nil
		}
		from = rv
	}
	_ = rc.Flush()
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	bookmark := time.NewTicker(watchBookmarkEvery)
	defer bookmark.Stop()
	s.metrics.watches.Inc()
	defer s.metrics.watches.Dec()
	replayed := !resume // a resumed watch says where its replay ends
	for {
		if !s.canReach(pr, ns) {
			_ = send("ERROR", mustJSON(api.NewStatus(http.StatusForbidden, api.ReasonForbidden, pr.String()+" no longer reaches namespace "+strconv.Quote(ns))), from)
			return nil
		}
		evs, next, grew, err := h.since(kind, from, keep)
		if err != nil {
			_ = send("ERROR", mustJSON(api.NewStatus(http.StatusGone, "Expired", err.Error())), from)
			return nil
		}
		for _, e := range evs {
			if send(e.Type, e.Object, e.RV) != nil {
				return nil
			}
		}
		from = next
		if !replayed {
			// The changes after the version resumed from, up to now, are
			// sent: a BOOKMARK says so (a client checking what changed
			// since a version reads up to it).
			replayed = true
			if send("BOOKMARK", nil, from) != nil || rc.Flush() != nil {
				return nil
			}
			continue
		}
		if len(evs) > 0 && rc.Flush() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-grew:
		case <-bookmark.C:
			if send("BOOKMARK", nil, from) != nil || rc.Flush() != nil {
				return nil
			}
		}
	}
}

// versionWait bounds how long a watch from a version this peer has not
// applied yet waits for it (a client that wrote through another peer).
const versionWait = 3 * time.Second

// reachVersion waits a moment for this peer's replica to apply version v,
// and refuses a version it does not reach, as Kubernetes does (504, "Too
// large resource version"): a watch from a version of the future would
// wait in silence for changes nobody may make.
func (s *core) reachVersion(ctx context.Context, v uint64) error {
	f := s.replica.FSM()
	if v <= f.Index() {
		return nil
	}
	if h := s.watchHub(); h != nil && v <= h.version() {
		return nil // a version this peer's events were stamped with
	}
	wctx, cancel := context.WithTimeout(ctx, versionWait)
	defer cancel()
	if f.WaitIndex(wctx, v) == nil {
		return nil
	}
	e := errorf(http.StatusGatewayTimeout, api.ReasonTimeout, "Too large resource version: %d, current: %d", v, f.Index())
	e.retryAfter = "1"
	return e
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
