package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/svc-project/svc/api"
)

// answer is an /api/v1 answer read whole.
type answer struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (a *answer) Header() http.Header { return a.header }

func (a *answer) WriteHeader(code int) {
	if a.code == 0 {
		a.code = code
	}
}

func (a *answer) Write(b []byte) (int, error) {
	if a.code == 0 {
		a.code = http.StatusOK
	}
	return a.body.Write(b)
}

// ok reports whether the call succeeded.
func (a *answer) ok() bool { return a.code >= 200 && a.code < 300 }

// passOn answers the caller an /api/v1 failure as it is (its Status body).
func (a *answer) passOn(w http.ResponseWriter) {
	if v := a.header.Get("Retry-After"); v != "" {
		w.Header().Set("Retry-After", v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.code)
	_, _ = w.Write(a.body.Bytes())
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
	a := &answer{header: http.Header{}}
	sub, err := d.request(r.Context(), r, method, path, q, body)
	if err != nil {
		a.code = http.StatusInternalServerError
		_ = json.NewEncoder(&a.body).Encode(api.NewStatus(a.code, api.ReasonInternalError, err.Error()))
		return a
	}
	d.cfg.Inner.ServeHTTP(a, sub)
	return a
}

// decode reads a successful answer's body into v.
func (a *answer) decode(v any) error { return json.Unmarshal(a.body.Bytes(), v) }

// stream is an /api/v1 answer read as it is written (a watch).
type stream struct {
	header http.Header
	code   chan int
	sent   bool
	pw     *io.PipeWriter
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
	return s.pw.Write(b)
}

// FlushError: every write reaches the reader as it is made.
func (s *stream) FlushError() error { return nil }

// watch starts the /api/v1 watch of path with q; the events are read from
// the reader until stop is called. A refusal comes back as the answer.
func (d *Door) watch(r *http.Request, path string, q url.Values) (events *json.Decoder, stop func(), refused *answer) {
	ctx, cancel := context.WithCancel(r.Context())
	q.Set("watch", "true")
	sub, err := d.request(ctx, r, http.MethodGet, path, q, nil)
	if err != nil {
		cancel()
		return nil, nil, d.call(r, http.MethodGet, path, q, nil)
	}
	pr, pw := io.Pipe()
	s := &stream{header: http.Header{}, code: make(chan int, 1), pw: pw}
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.cfg.Inner.ServeHTTP(s, sub)
		s.WriteHeader(http.StatusOK) // an empty answer
		_ = pw.Close()
	}()
	stop = func() {
		cancel()
		_ = pr.Close()
		<-done
	}
	if code := <-s.code; code != http.StatusOK {
		a := &answer{header: s.header, code: code}
		_, _ = io.Copy(&a.body, io.LimitReader(pr, 1<<20))
		stop()
		return nil, nil, a
	}
	return json.NewDecoder(pr), stop, nil
}

// rv is a resourceVersion as the door writes it.
func rv(index uint64) string { return strconv.FormatUint(index, 10) }
