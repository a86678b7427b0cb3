package hopbatch

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/svc-project/svc/internal/recorder"
)

// Serve answers a batch request r: it reads every request in r's body
// (refusing the whole batch, with nothing run, when one does not parse or
// the batch breaks l), then serves each with h at once, each in its own
// goroutine, as if it had arrived alone on r's connection (r's RemoteAddr,
// TLS state and context), and writes each answer as soon as h returns. It
// returns when every answer is written. A refusal is returned (wrapping
// ErrBadBatch) before anything is written.
func Serve(w http.ResponseWriter, r *http.Request, h http.Handler, l Limits) error {
	reqs, err := readRequests(http.MaxBytesReader(w, r.Body, l.maxBatchBytes()), l)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/http")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush() // the sender learns at once that the batch arrived
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		bad error // the first answer that could not be written
	)
	for i, req := range reqs {
		req.RemoteAddr, req.TLS = r.RemoteAddr, r.TLS
		req = req.WithContext(r.Context())
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := recorder.New(int(l.MaxAnswer))
			h.ServeHTTP(rec, req)
			resp := response(rec, i, l)
			mu.Lock()
			defer mu.Unlock()
			if bad != nil {
				return
			}
			if err := resp.Write(w); err != nil {
				bad = err
				return
			}
			_ = rc.Flush()
		}()
	}
	wg.Wait()
	return nil
}

// response is the recorded answer as it goes back, tagged with item i; an
// answer larger than l.MaxAnswer is replaced by a 502.
func response(rec *recorder.Recorder, i int, l Limits) *http.Response {
	code, header, body := rec.Code(), rec.Header().Clone(), rec.Body()
	if code == 0 {
		code = http.StatusOK
	}
	if rec.TooLarge() {
		code, header = http.StatusBadGateway, http.Header{"Content-Type": {"text/plain; charset=utf-8"}}
		body = fmt.Appendf(nil, "the answer took more bytes than a batch carries (%d)\n", l.MaxAnswer)
	}
	header.Del("Content-Length")
	header.Del("Transfer-Encoding")
	header.Set(HeaderItem, strconv.Itoa(i))
	return &http.Response{
		StatusCode:    code,
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		ContentLength: int64(len(body)),
		Body:          io.NopCloser(bytes.NewReader(body)),
	}
}
