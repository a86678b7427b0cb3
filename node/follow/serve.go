package follow

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// ServeLog answers a follower's read (GET LogPath?from=N&wait=D&leader=L,
// L the leader as the follower knows it): the
// batch as JSON, 410 Gone when the entries were compacted, 400 for a bad
// query.
func (f *Feed) ServeLog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err := strconv.ParseUint(q.Get("from"), 10, 64)
	if err != nil {
		http.Error(w, `query "from": an index is required`, http.StatusBadRequest)
		return
	}
	var wait time.Duration
	if s := q.Get("wait"); s != "" {
		if wait, err = time.ParseDuration(s); err != nil || wait < 0 {
			http.Error(w, `query "wait": a duration such as 20s is required`, http.StatusBadRequest)
			return
		}
	}
	b, err := f.Read(r.Context(), from, wait, q.Get("leader"))
	switch {
	case errors.Is(err, ErrCompacted):
		http.Error(w, err.Error(), http.StatusGone)
		return
	case errors.Is(err, ErrNotMember):
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	case err != nil && r.Context().Err() != nil:
		return // the follower left
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(b)
}

// ServeState answers a follower's copy of the whole state (GET StatePath).
func (f *Feed) ServeState(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if err := f.State(w); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	}
}
