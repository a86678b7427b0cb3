package recorder

import (
	"bytes"
	"errors"
	"net/http"
)

// ErrTooLarge is what Write returns once the body would pass the
// recorder's bound.
var ErrTooLarge = errors.New("the answer is larger than its bound")

// Recorder keeps an answer: its header, its first final status code and its
// body. The zero value is not ready: use New.
type Recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
	max    int
	over   bool
}

// New returns a recorder that keeps at most max bytes of body; 0 is no
// bound.
func New(max int) *Recorder { return &Recorder{header: http.Header{}, max: max} }

// Header is the answer's header, as the handler sets it.
func (r *Recorder) Header() http.Header { return r.header }

// WriteHeader keeps the first final status code; informational ones (1xx)
// and later calls are ignored, as net/http does.
func (r *Recorder) WriteHeader(code int) {
	if r.code == 0 && code >= 200 {
		r.code = code
	}
}

// Write keeps b, the answer a 200 if no code came before it. Past the
// bound nothing more is kept and ErrTooLarge returned.
func (r *Recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.max > 0 && r.body.Len()+len(b) > r.max {
		r.over = true
		return 0, ErrTooLarge
	}
	return r.body.Write(b)
}

// Flush does nothing: the answer is kept whole (a handler that streams,
// as the reverse proxy does, still works).
func (r *Recorder) Flush() {}

// Code is the answer's status code: 0 if the handler wrote nothing.
func (r *Recorder) Code() int { return r.code }

// OK reports whether the answer is a success (2xx).
func (r *Recorder) OK() bool { return r.code >= 200 && r.code < 300 }

// Body is the body kept.
func (r *Recorder) Body() []byte { return r.body.Bytes() }

// TooLarge reports whether the handler wrote more than the bound.
func (r *Recorder) TooLarge() bool { return r.over }

// CopyTo writes the kept answer to w as it is; an answer with no code
// goes as a 502 (the handler wrote nothing).
func (r *Recorder) CopyTo(w http.ResponseWriter) {
	for k, v := range r.header {
		w.Header()[k] = v
	}
	code := r.code
	if code == 0 {
		code = http.StatusBadGateway
	}
	w.WriteHeader(code)
	_, _ = w.Write(r.body.Bytes())
}
