package hopbatch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// HeaderItem tags each answer in a batch's response with the place (from
// 0) of the request it answers.
const HeaderItem = "X-Hopbatch-Item"

// Limits bound what one batch may hold.
type Limits struct {
	// MaxItems is the most requests in one batch.
	MaxItems int
	// MaxBody is the largest body of one request, MaxAnswer of one answer.
	MaxBody, MaxAnswer int64
}

// DefaultLimits hold 64 requests, each with a body of at most 1 MiB, and
// answers of at most 16 MiB each.
func DefaultLimits() Limits { return Limits{MaxItems: 64, MaxBody: 1 << 20, MaxAnswer: 16 << 20} }

// maxHeaderBytes bounds one request's or answer's header in a batch.
const maxHeaderBytes = 64 << 10

// maxBatchBytes is the most a batch's body may take under l.
func (l Limits) maxBatchBytes() int64 {
	return int64(l.MaxItems) * (l.MaxBody + maxHeaderBytes)
}

// ErrBadBatch is wrapped by every refusal of a malformed batch.
var ErrBadBatch = errors.New("malformed request batch")

// readRequests parses a batch's body: requests in HTTP/1.1 wire form, each
// with its whole body (a Content-Length, never chunked), at most
// l.MaxItems. Nothing is run before all of them parse.
func readRequests(body io.Reader, l Limits) ([]*http.Request, error) {
	br := bufio.NewReader(body)
	var reqs []*http.Request
	for {
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			break
		}
		if len(reqs) == l.MaxItems {
			return nil, fmt.Errorf("%w: more than %d requests", ErrBadBatch, l.MaxItems)
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return nil, fmt.Errorf("%w: request %d: %w", ErrBadBatch, len(reqs), err)
		}
		if len(req.TransferEncoding) > 0 || req.ContentLength < 0 {
			return nil, fmt.Errorf("%w: request %d has no Content-Length", ErrBadBatch, len(reqs))
		}
		if req.ContentLength > l.MaxBody {
			return nil, fmt.Errorf("%w: request %d's body is %d bytes, more than %d", ErrBadBatch, len(reqs), req.ContentLength, l.MaxBody)
		}
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, fmt.Errorf("%w: request %d's body: %w", ErrBadBatch, len(reqs), err)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		reqs = append(reqs, req)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%w: no request", ErrBadBatch)
	}
	return reqs, nil
}

// itemOf returns the place an answer in a batch is tagged with.
func itemOf(resp *http.Response, n int) (int, error) {
	i, err := strconv.Atoi(resp.Header.Get(HeaderItem))
	if err != nil || i < 0 || i >= n {
		return 0, fmt.Errorf("%w: an answer tagged %q in a batch of %d", ErrBadBatch, resp.Header.Get(HeaderItem), n)
	}
	return i, nil
}
