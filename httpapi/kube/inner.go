package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"

	"github.com/svc-project/svc/api"
	"github.com/svc-project/svc/internal/recorder"
)

// answer is an /api/v1 answer read whole.
type answer struct{ *recorder.Recorder }

func newAnswer() *answer { return &answer{recorder.New(0)} }

// ok reports whether the call succeeded.
func (a *answer) ok() bool { return a.OK() }

// passOn answers the caller an /api/v1 failure as it is (its Status body).
func (a *answer) passOn(w http.ResponseWriter) {
	if v := a.Header().Get("Retry-After"); v != "" {
		w.Header().Set("Retry-After", v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.Code())
	_, _ = w.Write(a.Body())
}

// request is the caller's request made the /api/v1 call method path: the
// same token, address, certificate and context.
func (d *Door) request(ctx context.Context, r *http.Request, method, path string, q url.Values, body any) (*http.Request, error) {
	sub := r.Clone(ctx)
	sub.Method = method
	sub.URL = &url.URL{Path: path, RawQuery: q.Encode()}
	sub.RequestURI = sub.URL.RequestURI()
	sub.Header.Del("Content-Encoding")
	sub.Header.Del("Content-Length")
	sub.Header.Set("Accept", "application/json")
	sub.Body, sub.ContentLength = http.NoBody, 0
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		sub.Body, sub.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		sub.Header.Set("Content-Type", "application/json")
	}
	return sub, nil
}

// call makes the /api/v1 call and reads its answer whole.
func (d *Door) call(r *http.Request, method, path string, q url.Values, body any) *answer {
	a := newAnswer()
	sub, err := d.request(r.Context(), r, method, path, q, body)
	if err != nil {
		a.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(a).Encode(api.NewStatus(http.StatusInternalServerError, api.ReasonInternalError, err.Error()))
		return a
	}
	d.cfg.Inner.ServeHTTP(a, sub)
	return a
}

// decode reads a successful answer's body into v.
func (a *answer) decode(v any) error { return json.Unmarshal(a.Body(), v) }

// stream is an /api/v1 answer read as it is written (a watch).
type stream struct {
	header http.Header
	code   chan int
	sent   bool
	pw     *io.PipeWriter
	// buf holds what the watch writes until it flushes: the reader wakes
	// a batch at a time, not an event at a time.
	buf *bufio.Writer
}

func (s *stream) Header() http.Header { return s.header }

func (s *stream) WriteHeader(code int) {
	if !s.sent {
		s.sent = true
		s.code <- code
	}
}

func (s *stream) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return s.buf.Write(b)
}

// FlushError passes what the /api/v1 watch wrote on to the reader, with an
// empty line that marks where it flushed: the door flushes its own answer
// there, a batch of events at a time, as /api/v1 does.
func (s *stream) FlushError() error {
	s.WriteHeader(http.StatusOK)
	if err := s.buf.WriteByte('\n'); err != nil {
		return err
	}
	return s.buf.Flush()
}

// watchEvents reads an /api/v1 watch's events, one JSON line each, as the
// watch writes them.
type watchEvents struct{ r *bufio.Reader }

// next returns the next event, or flushed where the watch flushed.
func (e *watchEvents) next() (ev api.WatchEvent, flushed bool, err error) {
	line, err := e.r.ReadBytes('\n')
	if err != nil && (len(line) == 0 || !errors.Is(err, io.EOF)) {
		return ev, false, err
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return ev, true, nil
	}
	if ev, ok := splitEvent(line); ok {
		return ev, false, nil
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return ev, false, fmt.Errorf("an event of the watch: %w", err)
	}
	return ev, false, nil
}

// splitEvent cuts an event line as /api/v1's watch writes it (the fields
// of api.WatchEvent in their order: a type of letters, the object, a
// version of digits) without decoding the object, which the resource's
// conversion decodes once; ok is false for any other line.
func splitEvent(line []byte) (ev api.WatchEvent, ok bool) {
	const head, mid, tail = `{"type":"`, `","object":`, `,"resourceVersion":"`
	rest, found := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte(head))
	if !found {
		return ev, false
	}
	typ, rest, found := bytes.Cut(rest, []byte(mid))
	if !found || len(typ) == 0 || bytes.ContainsFunc(typ, func(r rune) bool { return r < 'A' || r > 'Z' }) {
		return ev, false
	}
	i := bytes.LastIndex(rest, []byte(tail))
	if i < 0 || !bytes.HasSuffix(rest, []byte(`"}`)) {
		return ev, false
	}
	obj, version := rest[:i], rest[i+len(tail):len(rest)-2]
	if len(obj) == 0 || obj[0] != '{' || obj[len(obj)-1] != '}' || len(version) == 0 || bytes.ContainsFunc(version, func(r rune) bool { return r < '0' || r > '9' }) {
		return ev, false
	}
	return api.WatchEvent{Type: string(typ), Object: obj, ResourceVersion: string(version)}, true
}

// watch starts the /api/v1 watch of path with q; the events are read from
// the reader until stop is called. A refusal comes back as the answer.
func (d *Door) watch(r *http.Request, path string, q url.Values) (events *watchEvents, stop func(), refused *answer) {
	ctx, cancel := context.WithCancel(r.Context())
	q.Set("watch", "true")
	sub, err := d.request(ctx, r, http.MethodGet, path, q, nil)
	if err != nil {
		cancel()
		return nil, nil, d.call(r, http.MethodGet, path, q, nil)
	}
	pr, pw := io.Pipe()
	s := &stream{header: http.Header{}, code: make(chan int, 1), pw: pw, buf: bufio.NewWriterSize(pw, 64<<10)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.cfg.Inner.ServeHTTP(s, sub)
		s.WriteHeader(http.StatusOK) // an empty answer
		_ = s.buf.Flush()
		_ = pw.Close()
	}()
	stop = func() {
		cancel()
		_ = pr.Close()
		<-done
	}
	if code := <-s.code; code != http.StatusOK {
		a := newAnswer()
		maps.Copy(a.Header(), s.header)
		a.WriteHeader(code)
		_, _ = io.Copy(a, io.LimitReader(pr, 1<<20))
		stop()
		return nil, nil, a
	}
	return &watchEvents{r: bufio.NewReaderSize(pr, 64<<10)}, stop, nil
}

// rv is a resourceVersion as the door writes it.
func rv(index uint64) string { return strconv.FormatUint(index, 10) }
